"""Comma-separated lists as every parameter and option reads them: items stripped, empty ones left out."""


def comma_items(text: str) -> list[str]:
    """``" a, b,,c "`` → ``["a", "b", "c"]``: a space after a comma, or a comma left at the end, changes nothing."""
    return [item for item in (part.strip() for part in text.split(",")) if item]
