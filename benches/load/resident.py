"""Where a running process's resident memory is (KiB), from /proc/PID/pagemap.

  resident.py PID
      The program's own file by ELF section (its code, read-only data, relocations, and the
      data the loader copied to relocate it), each shared library, and anonymous memory (the
      heap, the main stack, and the rest: allocator arenas, thread stacks).

/proc/PID/status gives only the anonymous and file-backed totals; the load benchmark
(run.sh) prints this for both servers, to show which part of the binary the difference is in.
A page counts where it is mapped, not in the page cache: the kernel maps file pages 64 KiB
around each one that faults, so scattered reads of a section make most of it resident.
Needs readelf (binutils). Pages the process copied on write (a relocated section) count as
"copied"; they are private, as anonymous memory is.
"""
import collections
import os
import re
import struct
import subprocess
import sys

PAGE = os.sysconf("SC_PAGE_SIZE")
PRESENT = 1 << 63
# Set for a page of a file (or shared memory), clear for a private copy of one.
FILE_PAGE = 1 << 61
# A section line of `readelf -SW`: `[Nr] Name Type Address Off Size ...`.
SECTION = re.compile(r"^\s*\[\s*\d+\]\s+(\S+)\s+\S+\s+([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)\s")


def mappings(pid):
    """(start, end, file offset, path) of each mapping; path is '' for anonymous memory."""
    with open(f"/proc/{pid}/maps") as maps:
        for line in maps:
            fields = line.split(maxsplit=5)
            start, end = (int(x, 16) for x in fields[0].split("-"))
            yield start, end, int(fields[2], 16), fields[5].strip() if len(fields) > 5 else ""


def sections(binary):
    """(name, address, size) of each section the program loads."""
    listing = subprocess.run(["readelf", "-SW", binary], check=True, capture_output=True, text=True).stdout
    for line in listing.splitlines():
        match = SECTION.match(line)
        if match and int(match.group(2), 16) > 0:
            yield match.group(1), int(match.group(2), 16), int(match.group(3), 16)


def is_position_independent(binary):
    with open(binary, "rb") as elf:
        header = elf.read(18)
    return struct.unpack_from("<H", header, 16)[0] == 3  # ET_DYN


class Pages:
    """The state of each page of a process, read from its pagemap."""

    def __init__(self, pid):
        self.pagemap = open(f"/proc/{pid}/pagemap", "rb")

    def count(self, start, end):
        """(resident pages, of which private copies) in [start, end)."""
        first, last = start // PAGE, (end + PAGE - 1) // PAGE
        self.pagemap.seek(first * 8)
        entries = struct.unpack(f"<{last - first}Q", self.pagemap.read((last - first) * 8))
        resident = [e for e in entries if e & PRESENT]
        return len(resident), sum(1 for e in resident if not e & FILE_PAGE)


def report(pid):
    program = os.path.realpath(f"/proc/{pid}/exe")
    maps = list(mappings(pid))
    pages = Pages(pid)
    kib = PAGE // 1024
    # A position-independent program is loaded at its first mapping, which maps offset 0.
    program_start = min(start for start, _, _, path in maps if path == program)
    bias = program_start if is_position_independent(program) else 0
    counted_to = 0  # the first page not yet counted
    parts = []
    for name, address, size in sections(program):
        start, end = bias + address, bias + address + size
        # A page shared by two sections counts once, for the first.
        first_page = max(start // PAGE, counted_to)
        if first_page * PAGE >= end:
            continue
        resident, copied = pages.count(first_page * PAGE, end)
        counted_to = (end + PAGE - 1) // PAGE
        if resident:
            parts.append(f"{name} {resident * kib}" + (f" ({copied * kib} copied)" if copied else ""))
    libraries = collections.Counter()
    anonymous = collections.Counter()
    for start, end, _, path in maps:
        if path == program:
            continue
        if path.startswith("/"):
            libraries[os.path.basename(path)] += pages.count(start, end)[0] * kib
        elif path in ("[heap]", "[stack]"):
            anonymous[path.strip("[]")] += pages.count(start, end)[0] * kib
        elif path == "" or path.startswith("[anon"):
            resident = pages.count(start, end)[0]
            # The end of `.bss` lies in an anonymous mapping, and was counted with the sections.
            overlap = (max(start, program_start), min(end, counted_to * PAGE))
            if overlap[0] < overlap[1]:
                resident -= pages.count(*overlap)[0]
            anonymous["other"] += resident * kib
        # The rest ([vdso], [vvar], [vsyscall]) is the kernel's.
    listed = lambda sizes: ", ".join(f"{name} {size}" for name, size in sizes.most_common() if size)
    return [
        f"{os.path.basename(program)}: " + ", ".join(parts),
        "libraries: " + listed(libraries),
        "anonymous: " + listed(anonymous),
    ]


if __name__ == "__main__":
    if len(sys.argv) != 2 or not sys.argv[1].isdigit():
        sys.exit(__doc__)
    for line in report(int(sys.argv[1])):
        print(line)
