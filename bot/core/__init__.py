"""The pure part: text in, verdict out (scan, tracebacks, extraction, the rules, the text model, records)."""
