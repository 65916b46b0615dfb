//! Documents made to hurt a document reader, written byte by byte so each test can make its
//! own: a PDF whose form draws itself (unbounded recursion), one whose content stream inflates
//! twice to a size of the caller's choosing (a decompression bomb), and one whose forms fan out
//! ten-fold level after level (exponential work in constant memory). Beside them, an honest
//! one-page PDF, so a test can show that ordinary documents are still read.

use std::io::Write;

/// A one-page PDF that shows `text` in Helvetica.
pub fn text_pdf(text: &str) -> Vec<u8> {
    let escaped = text.replace('\\', "\\\\").replace('(', "\\(").replace(')', "\\)");
    let content = format!("BT /F1 12 Tf 72 720 Td ({escaped}) Tj ET");
    pdf(&[
        "<< /Type /Catalog /Pages 2 0 R >>".into(),
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>".into(),
        page("/Font << /F1 5 0 R >>"),
        stream("", content.as_bytes()),
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".into(),
    ])
}

/// A PDF whose page draws Form XObject `/X1`, whose content is `/X1 Do`: the form has no
/// resources of its own, so it inherits the page's and draws itself, without end.
pub fn self_drawing_form_pdf() -> Vec<u8> {
    pdf(&[
        "<< /Type /Catalog /Pages 2 0 R >>".into(),
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>".into(),
        page("/XObject << /X1 5 0 R >>"),
        stream("", b"/X1 Do"),
        stream("/Type /XObject /Subtype /Form /BBox [0 0 612 792]", b"/X1 Do"),
    ])
}

/// A PDF whose page content is `inflated` bytes of spaces, deflated twice
/// (`/Filter [/FlateDecode /FlateDecode]`): a few kilobytes that a reader without an output
/// cap inflates whole.
pub fn deflate_bomb_pdf(inflated: u64) -> Vec<u8> {
    let inner = zlib_of_spaces(inflated);
    let mut outer = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    outer.write_all(&inner).expect("deflate into memory");
    let outer = outer.finish().expect("deflate into memory");
    pdf(&[
        "<< /Type /Catalog /Pages 2 0 R >>".into(),
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>".into(),
        page(""),
        stream("/Filter [/FlateDecode /FlateDecode]", &outer),
    ])
}

/// A PDF whose page draws form X0, each form Xi drawing X(i+1) `width` times, `levels`
/// deep: `width^levels` draws of the last form, in constant memory.
pub fn fan_out_pdf(levels: u32, width: u32) -> Vec<u8> {
    // Objects 1-4: catalog, pages, page, page content; then form i is object 5 + i.
    let mut objects = vec![
        "<< /Type /Catalog /Pages 2 0 R >>".into(),
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>".into(),
        page("/XObject << /X0 5 0 R >>"),
        stream("", b"/X0 Do"),
    ];
    for level in 0..levels {
        let next = level + 1;
        let (resources, content) = if next < levels {
            (
                format!("/Resources << /XObject << /X{next} {} 0 R >> >>", 5 + next),
                format!("/X{next} Do\n").repeat(width as usize),
            )
        } else {
            (String::new(), "0 0 m 1 1 l S".to_owned())
        };
        objects.push(stream(
            &format!("/Type /XObject /Subtype /Form /BBox [0 0 612 792] {resources}"),
            content.as_bytes(),
        ));
    }
    pdf(&objects)
}

fn page(resources: &str) -> String {
    format!("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << {resources} >> /Contents 4 0 R >>")
}

// A stream object's text: its dictionary (less /Length, added here) and its bytes. Bytes that
// are not UTF-8 are carried through `pdf` as Latin-1, one char a byte.
fn stream(dictionary: &str, bytes: &[u8]) -> String {
    let body: String = bytes.iter().map(|&b| char::from(b)).collect();
    format!("<< {dictionary} /Length {} >>\nstream\n{body}\nendstream", bytes.len())
}

/// A PDF file of `objects` (object n is `objects[n - 1]`, its text between `n 0 obj` and
/// `endobj`; each char one byte, so a stream's binary data goes as Latin-1), with its
/// cross-reference table and trailer; object 1 is the catalog.
pub fn pdf(objects: &[String]) -> Vec<u8> {
    let mut out: Vec<u8> = b"%PDF-1.5\n%\xE2\xE3\xCF\xD3\n".to_vec();
    let mut offsets = Vec::with_capacity(objects.len());
    for (i, object) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend(format!("{} 0 obj\n", i + 1).bytes());
        out.extend(object.chars().map(|c| u8::try_from(u32::from(c)).unwrap_or(b'?')));
        out.extend(b"\nendobj\n");
    }
    let xref = out.len();
    out.extend(format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).bytes());
    for offset in offsets {
        out.extend(format!("{offset:010} 00000 n \n").bytes());
    }
    out.extend(format!("trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n", objects.len() + 1).bytes());
    out
}

/// A zlib stream of `len` spaces, written directly in fixed-Huffman deflate: a literal space,
/// then back-references of 258 bytes at distance 1 (13 bits each), so a gigabyte takes about
/// 6.5 MB and no time to make. Its checksum is left zero: a reader that inflates it whole has
/// spent the memory before it gets to the end.
fn zlib_of_spaces(len: u64) -> Vec<u8> {
    let mut bits = Bits::default();
    // BFINAL = 1, BTYPE = 01 (fixed Huffman).
    bits.put(1, 1);
    bits.put(1, 2);
    if len > 0 {
        // The literal ' ' (0x20): fixed code 0x30 + 0x20, 8 bits.
        bits.huffman(0x30 + 0x20, 8);
        let mut left = len - 1;
        while left >= 258 {
            // Length 258 is code 285 (8 bits: 0xC0 + 5), distance 1 is code 0 (5 bits).
            bits.huffman(0xC5, 8);
            bits.huffman(0, 5);
            left -= 258;
        }
        for _ in 0..left {
            bits.huffman(0x30 + 0x20, 8);
        }
    }
    // End of block: code 256, 7 zero bits.
    bits.huffman(0, 7);
    let mut out = vec![0x78, 0x01];
    out.extend(bits.finish());
    out.extend([0, 0, 0, 0]);
    out
}

// Deflate's bit order: values least significant bit first, Huffman codes most significant
// bit first.
#[derive(Default)]
struct Bits {
    bytes: Vec<u8>,
    current: u32,
    used: u32,
}

impl Bits {
    fn put(&mut self, value: u32, count: u32) {
        for i in 0..count {
            self.current |= ((value >> i) & 1) << self.used;
            self.used += 1;
            if self.used == 8 {
                self.bytes.push(self.current as u8);
                self.current = 0;
                self.used = 0;
            }
        }
    }

    fn huffman(&mut self, code: u32, count: u32) {
        for i in (0..count).rev() {
            self.put((code >> i) & 1, 1);
        }
    }

    fn finish(mut self) -> Vec<u8> {
        if self.used > 0 {
            self.bytes.push(self.current as u8);
        }
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn the_handwritten_deflate_inflates_to_spaces() {
        for len in [0u64, 1, 257, 258, 259, 1000, 100_000] {
            let stream = zlib_of_spaces(len);
            // Past the header, a raw deflate stream (the checksum is not checked here).
            let mut inflated = Vec::new();
            flate2::read::DeflateDecoder::new(&stream[2..]).read_to_end(&mut inflated).unwrap();
            assert_eq!(inflated.len() as u64, len);
            assert!(inflated.iter().all(|&b| b == b' '));
        }
    }

    #[test]
    fn the_bomb_is_small_and_the_files_are_pdfs() {
        let bomb = deflate_bomb_pdf(1 << 30);
        assert!(bomb.len() < 64 * 1024, "{} bytes", bomb.len());
        for pdf in [bomb, self_drawing_form_pdf(), fan_out_pdf(14, 10), text_pdf("Glucose 5.4 mmol/L")] {
            assert!(pdf.starts_with(b"%PDF-1.5"));
            assert!(pdf.ends_with(b"%%EOF\n"));
        }
    }
}
