"""Write shelf.docx (tests/unit/test_tables.py): a caption at the foot of a page whose table, without rules,
LibreOffice moves whole to the next page. `make shelf.pdf` converts it.
"""

import sys

from docx import Document
from docx.shared import Pt

FILL = int(sys.argv[1]) if len(sys.argv) > 1 else 10
SHORT = int(sys.argv[2]) if len(sys.argv) > 2 else 2

document = Document()
document.add_heading("Shelf life of stored grain", level=1)
for n in range(FILL):
    document.add_paragraph(
        "Grain stored dry and cool keeps for years; the tables below give the months each kind kept its "
        f"germination above ninety percent in the trial stores (part {n + 1})."
    )
for n in range(SHORT):
    document.add_paragraph(f"Store {n + 1} was checked each month.")
document.add_paragraph("Table 1: Months of storage by grain and store.")
table = document.add_table(rows=1, cols=3)
for cell, text in zip(table.rows[0].cells, ["Grain", "Cool store", "Barn"], strict=True):
    cell.text = text
ROWS = [("Barley", "48", "20"), ("Oats", "40", "18"), ("Rye", "52", "26"), ("Wheat", "60", "30")]
for grain, cool, barn in ROWS:
    row = table.add_row()
    for cell, text in zip(row.cells, [grain, cool, barn], strict=True):
        cell.text = text
        for run in cell.paragraphs[0].runs:
            run.font.size = Pt(11)
document.add_paragraph("Wheat kept longest in both stores, and every grain kept twice as long when cool.")
document.save("shelf.docx")
