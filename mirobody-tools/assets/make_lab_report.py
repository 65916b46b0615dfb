"""Writes lab-report.pdf: a one-page lab report whose text a PDF reader can extract.

Run `python3 make_lab_report.py` here; the output is the same bytes every time. The demo
uploads it, and the tests upload it and read its text back.
"""

LINES = [
    "Example Clinic - Laboratory report",
    "Patient: Alex Demo    Collected: 2026-01-15",
    "Complete blood count",
    "Hemoglobin 14.1 g/dL (13.5-17.5)",
    "White cells 6.2 x10^9/L (4.5-11.0)",
    "Platelets 250 x10^9/L (150-450)",
    "Glucose 5.4 mmol/L (3.9-5.5)",
    "Summary: results within reference ranges.",
]


def escape(text):
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def main():
    stream = ["BT", "/F1 12 Tf", "14 TL", "50 780 Td"]
    for line in LINES:
        stream.append(f"({escape(line)}) Tj T*")
    stream.append("ET")
    content = "\n".join(stream).encode("latin-1")
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    with open("lab-report.pdf", "wb") as f:
        f.write(out)


if __name__ == "__main__":
    main()
