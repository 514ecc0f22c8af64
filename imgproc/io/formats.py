"""What the loader reads and the writer writes, as plain constants (no imports), so the
command line can build its options without importing NumPy, Pillow or JAX."""

# output extension -> Pillow format name
OUTPUT_FORMATS = {
    ".jpg": "JPEG",
    ".jpeg": "JPEG",
    ".jpe": "JPEG",
    ".png": "PNG",
    ".tif": "TIFF",
    ".tiff": "TIFF",
    ".webp": "WEBP",
    ".bmp": "BMP",
}
ALLOWED_FORMATS = ("JPEG", "PNG", "WEBP", "TIFF", "BMP", "GIF")
DEFAULT_MAX_PIXELS = 90_000_000
