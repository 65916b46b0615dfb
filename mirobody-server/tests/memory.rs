//! `memory::release_startup_pages` on this test program itself, alone in its own test binary so
//! that no other test's threads bring pages back while it measures.
#![cfg(target_os = "linux")]

use mirobody_server::memory::release_startup_pages;

/// Read-only data of this program, 256 KiB, whose contents the test checks after the release.
static TABLE: [u64; 32 * 1024] = {
    let mut table = [0u64; 32 * 1024];
    let mut i = 0;
    while i < table.len() {
        table[i] = (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x5851_F42D_4C95_7F2D;
        i += 1;
    }
    table
};

fn table_checksum() -> u64 {
    std::hint::black_box(&TABLE).iter().fold(0u64, |sum, &x| sum.rotate_left(5) ^ x)
}

/// This program's own mappings that are not writable: how much of them is resident, in KiB,
/// and how many of them have read-ahead turned off (`rr` among their `VmFlags`), of how many.
fn read_only_program_mappings() -> (usize, usize, usize) {
    let program = std::fs::read_link("/proc/self/exe").unwrap();
    let program = program.to_string_lossy();
    let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
    let (mut resident_kib, mut random, mut mappings) = (0, 0, 0);
    let mut counting = false;
    for line in smaps.lines() {
        let fields: Vec<&str> = line.split_ascii_whitespace().collect();
        match fields.first() {
            Some(key) if !key.ends_with(':') => {
                counting = fields.len() >= 6 && fields[1].as_bytes()[1] == b'-' && line.ends_with(&*program);
                mappings += usize::from(counting);
            }
            Some(&"Rss:") if counting => resident_kib += fields[1].parse::<usize>().unwrap(),
            Some(&"VmFlags:") if counting => random += usize::from(fields.contains(&"rr")),
            _ => {}
        }
    }
    (resident_kib, random, mappings)
}

fn resident_read_only_program_kib() -> usize {
    read_only_program_mappings().0
}

#[test]
fn releasing_drops_the_programs_resident_pages_and_their_contents_come_back_unchanged() {
    let checksum = table_checksum();
    let before = resident_read_only_program_kib();
    assert_eq!(read_only_program_mappings().1, 0, "read-ahead is on before the release");
    assert!(before >= 256, "the table alone is 256 KiB and was just read: {before} KiB resident");

    let advised = release_startup_pages().expect("MADV_PAGEOUT needs Linux 5.4 or later");
    let after = resident_read_only_program_kib();
    assert!(advised >= before * 1024, "advised {advised} bytes, while {before} KiB were resident");
    assert!(after < before / 2, "resident read-only program pages: {before} KiB before, {after} KiB after");

    // Read-ahead is off for the released mappings (the code and the read-only data; not the
    // relocated data, which holds copied pages), so that using a page again brings back that
    // page and not the megabytes around it.
    let (_, random, mappings) = read_only_program_mappings();
    assert!(random >= 2, "{random} of {mappings} read-only mappings without read-ahead");

    // The data is read back from the file on use, unchanged.
    assert_eq!(table_checksum(), checksum);
    assert!(resident_read_only_program_kib() >= after + 200, "reading the table made it resident again");
}
