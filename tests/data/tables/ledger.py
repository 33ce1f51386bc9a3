"""Write ledger.docx (tests/unit/test_tables.py): a table too long for its page, which Word and LibreOffice
carry over to the next one, with its header repeated there. `make ledger.pdf` converts it.
"""

from docx import Document
from docx.oxml import OxmlElement
from docx.shared import Pt

STATIONS = ["Aberdeen", "Bergen", "Cork", "Dundee", "Esbjerg", "Falmouth", "Galway", "Hull", "Inverness"]

document = Document()
document.add_heading("Rainfall at coastal stations", level=1)
for n in range(6):
    document.add_paragraph(
        "The stations below report the rain gauged each month at the harbour wall, read at nine each morning "
        f"and checked against the nearest inland gauge (note {n + 1})."
    )
document.add_paragraph("Table 1: Monthly rainfall at each station.")
table = document.add_table(rows=1, cols=3)
table.style = "Table Grid"
header = table.rows[0]
for cell, text in zip(header.cells, ["Station and month", "Rain (mm)", "Dry days"], strict=True):
    cell.text = text
header._tr.get_or_add_trPr().append(OxmlElement("w:tblHeader"))  # repeated on the next page, as Word offers
for n in range(40):
    row = table.add_row()
    values = [f"{STATIONS[n % 9]} {n // 9 + 1}", f"{40 + (n * 37) % 90}.{n % 10}", str((n * 7) % 19)]
    for cell, text in zip(row.cells, values, strict=True):
        cell.text = text
        for run in cell.paragraphs[0].runs:
            run.font.size = Pt(10)
document.add_paragraph("The wettest month at every station was the last one gauged.")
document.save("ledger.docx")
