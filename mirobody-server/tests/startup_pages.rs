//! `startup_pages::release_startup_pages` on this test program itself, alone in its own test
//! binary so that no other test's threads bring pages back while it measures.
#![cfg(target_os = "linux")]

use mirobody_server::startup_pages::release_startup_pages;

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

/// How many of the pages holding `TABLE` are mapped in this process (`/proc/self/pagemap`'s
/// present bit), of how many. Only the table's own pages are counted: the code that runs while
/// the test measures brings its own pages back, and on kernels that map large pieces of the
/// page cache at once, with them whatever lies beside them.
fn table_pages_present() -> (usize, usize) {
    use std::os::unix::fs::FileExt;
    const PAGE: usize = 4096;
    let first = (TABLE.as_ptr() as usize).div_ceil(PAGE);
    let end = (TABLE.as_ptr() as usize + std::mem::size_of_val(&TABLE)) / PAGE;
    let mut entries = vec![0u8; (end - first) * 8];
    let pagemap = std::fs::File::open("/proc/self/pagemap").unwrap();
    pagemap.read_exact_at(&mut entries, first as u64 * 8).unwrap();
    let present = entries.chunks_exact(8).filter(|e| u64::from_le_bytes((*e).try_into().unwrap()) >> 63 == 1).count();
    (present, end - first)
}

#[test]
fn releasing_drops_the_programs_resident_pages_and_their_contents_come_back_unchanged() {
    let checksum = table_checksum();
    let (resident, random, _) = read_only_program_mappings();
    assert_eq!(random, 0, "read-ahead is on before the release");
    let (present, pages) = table_pages_present();
    assert_eq!(present, pages, "the table was just read");

    let advised = release_startup_pages().expect("MADV_PAGEOUT needs Linux 5.4 or later");
    assert!(advised >= resident * 1024, "advised {advised} bytes, while {resident} KiB were resident");
    let (present, _) = table_pages_present();
    assert!(present < pages / 4, "{present} of the table's {pages} pages still mapped after the release");

    // Read-ahead is off for the released mappings (the code and the read-only data; not the
    // relocated data, which holds copied pages), so that using a page again brings back that
    // page and not the megabytes around it.
    let (_, random, mappings) = read_only_program_mappings();
    assert!(random >= 2, "{random} of {mappings} read-only mappings without read-ahead");

    // The data is read back from the file on use, unchanged.
    assert_eq!(table_checksum(), checksum);
    assert_eq!(table_pages_present(), (pages, pages), "reading the table mapped it again");
}
