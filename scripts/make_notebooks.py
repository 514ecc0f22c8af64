"""Write notebooks/01_denoise.ipynb from the cells below (so the notebook's source is
reviewable as Python). The tests execute the notebook; run this script after editing."""

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

CELLS = [
    ("md", """# Denoising the cat with imgproc

The walk-through of the chapter imgproc started from ("JAX in Action", chapter 3): load the
cat, crop and flip it by slicing, add noise, blur it with a Gaussian, sharpen it back, and
compare — with imgproc's compiled filters instead of hand-written `convolve2d` loops."""),
    ("code", """import os
import numpy as np
import matplotlib.pyplot as plt
import imgproc
from imgproc import kernels

img = imgproc.load_image("../sample_images/chelsea.jpg")
img.shape, img.dtype"""),
    ("md", "Images are arrays: cropping is slicing, flipping is a reversed slice, rotation is `np.rot90`."),
    ("code", """cat_face = img[80:220, 190:330, 1]  # green channel of the face
flipped = img[:, ::-1, :]
rotated = np.rot90(img, k=2, axes=(0, 1))
fig, axes = plt.subplots(1, 3, figsize=(12, 3))
for ax, im, title in zip(axes, [cat_face, flipped, rotated], ["face, green channel", "flipped", "rotated 180"]):
    ax.imshow(im, cmap="gray" if im.ndim == 2 else None); ax.set_title(title); ax.axis("off")
assert cat_face.shape == (140, 140)"""),
    ("md", """Add Gaussian noise (as a camera at high ISO would), in float32 in [0, 1]. imgproc never
rescales behind your back: float in, float out, same range."""),
    ("code", """from skimage.util import img_as_float32, random_noise

clean = img_as_float32(img)
noisy = random_noise(clean, mode="gaussian", rng=0).astype(np.float32)
imgproc.psnr(clean, noisy)"""),
    ("md", """The chapter's kernels are in `imgproc.kernels`: its raw 5×5 Gaussian table
(`normalize=False`) and its sharpen matrix (−1 around 50, divided by 26)."""),
    ("code", """print(kernels.gaussian(1.0, size=5, normalize=False).round(8))
print(kernels.sharpen().round(8))"""),
    ("code", """blurred = imgproc.gaussian_blur(noisy, 1.0, size=5)          # scipy.ndimage.gaussian_filter semantics
restored = imgproc.sharpen(blurred)                               # the 5x5 sharpen
pipeline = imgproc.presets.denoise()                              # the same two stages, one compiled program
np.testing.assert_allclose(np.asarray(pipeline(noisy)), np.asarray(restored), atol=1e-5)
pipeline.to_spec()"""),
    ("code", """psnr_noisy = imgproc.psnr(clean, noisy)
psnr_blur = imgproc.psnr(clean, np.clip(np.asarray(blurred), 0, 1))
psnr_restored = imgproc.psnr(clean, np.clip(np.asarray(restored), 0, 1))
print(f"PSNR noisy {psnr_noisy:.2f} dB, blurred {psnr_blur:.2f} dB, restored {psnr_restored:.2f} dB")
assert psnr_restored > psnr_noisy"""),
    ("code", """fig, axes = plt.subplots(2, 2, figsize=(12, 8))
panels = [(clean, "original"), (noisy, f"noisy {psnr_noisy:.1f} dB"),
          (restored, f"blurred + sharpened {psnr_restored:.1f} dB"), (blurred, f"blurred {psnr_blur:.1f} dB")]
for ax, (im, title) in zip(axes.flat, panels):
    ax.imshow(np.clip(np.asarray(im), 0, 1)); ax.set_title(title); ax.axis("off")
fig.tight_layout()"""),
    ("md", """Save the result. `save_image` writes atomically and refuses to replace an existing file
unless `overwrite=True`; float images in [0, 1] are written as 8-bit."""),
    ("code", """import tempfile
out_dir = os.environ.get("IMGPROC_NOTEBOOK_OUT") or tempfile.mkdtemp()
path = imgproc.save_image(os.path.join(out_dir, "cat_restored.jpg"), np.asarray(restored), overwrite=True)
imgproc.load_image(path).shape"""),
]


def build(cells=CELLS) -> nbformat.NotebookNode:
    """A notebook of ``cells``: ``("md" | "code", source)`` pairs."""
    nb = new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [new_markdown_cell(src) if kind == "md" else new_code_cell(src) for kind, src in cells]
    return nb


def write(cells, name: str) -> Path:
    """Write the notebook of ``cells`` to ``notebooks/NAME``."""
    path = Path(__file__).resolve().parents[1] / "notebooks" / name
    nbformat.write(build(cells), path)
    print(f"wrote {path}")
    return path


if __name__ == "__main__":
    write(CELLS, "01_denoise.ipynb")
