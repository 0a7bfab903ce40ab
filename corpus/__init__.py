"""Pure text logic: readers, Moses processing, scores, cut points. No Beam, Luigi or torch."""
