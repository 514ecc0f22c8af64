"""Write notebooks/03_denoise_methods.ipynb from the cells below (so the notebook's source is
reviewable as Python). The tests execute the notebook (on a crop of the cat when
IMGPROC_SMALL_BUDGET is set); run this script after editing."""

from make_notebooks import write  # scripts/: one notebook writer

CELLS = [
    ("md", """# Denoising methods side by side

`imgproc.restoration` has the classical denoisers as compiled JAX functions (and pipeline
stages): non-local means, total variation (Chambolle), bilateral, median, the seed chapter's
Gaussian + sharpen, and `denoise(method="auto")`, which estimates the noise of each image
(`estimate_sigma`, wavelet MAD as scikit-image) and checks for salt-and-pepper noise
(`impulse_fraction`) before it picks a method. Here they all run on the noisy cat; PSNR and
SSIM are measured against the clean photo."""),
    ("code", """import os, time
import numpy as np
import matplotlib.pyplot as plt
import imgproc

clean = imgproc.load_image("../sample_images/chelsea.jpg")
noisy = imgproc.load_image("../sample_images/chelsea_noisy.jpg")
if os.environ.get("IMGPROC_SMALL_BUDGET"):  # the test run: a crop around the face
    clean, noisy = clean[60:188, 180:308], noisy[60:188, 180:308]
sigma = float(imgproc.estimate_sigma(noisy))
print(f"{noisy.shape}, estimated noise sigma {sigma:.1f} (0..255), impulses {float(imgproc.impulse_fraction(noisy)):.2%}")"""),
    ("md", """Each method gets the estimated sigma where it takes one (units: the image's, here
0..255). Times are for a second call (the first one compiles)."""),
    ("code", """methods = {
    "chapter (Gaussian + sharpen)": lambda x: imgproc.denoise(x, method="chapter"),
    "median 3x3": lambda x: imgproc.median(x, size=3),
    "bilateral": lambda x: imgproc.bilateral(x, sigma_color=2 * sigma, sigma_spatial=2.0, size=5),
    "tv_chambolle": lambda x: imgproc.tv_chambolle(x, weight=0.1),
    "nl_means": lambda x: imgproc.nl_means(x, sigma=sigma, h=0.6 * sigma),
    "auto": lambda x: imgproc.denoise(x),
}
results = {}
for name, fn in methods.items():
    np.asarray(fn(noisy))  # compile
    t = time.perf_counter()
    out = np.asarray(fn(noisy))
    ms = (time.perf_counter() - t) * 1e3
    results[name] = (out, imgproc.psnr(clean, out), imgproc.ssim(clean, out, channel_axis=-1), ms)
print(f"{'method':30s} {'PSNR dB':>8s} {'SSIM':>6s} {'ms':>8s}")
print(f"{'noisy':30s} {imgproc.psnr(clean, noisy):8.2f} {imgproc.ssim(clean, noisy, channel_axis=-1):6.3f}")
for name, (_, p, s, ms) in results.items():
    print(f"{name:30s} {p:8.2f} {s:6.3f} {ms:8.1f}")
assert results["auto"][1] > results["chapter (Gaussian + sharpen)"][1]"""),
    ("code", """fig, axes = plt.subplots(2, 4, figsize=(16, 8))
panels = [(clean, "clean"), (noisy, f"noisy {imgproc.psnr(clean, noisy):.2f} dB")]
panels += [(out, f"{name}\\n{p:.2f} dB, SSIM {s:.3f}") for name, (out, p, s, _) in results.items()]
for ax, (im, title) in zip(axes.flat, panels):
    ax.imshow(im); ax.set_title(title, fontsize=10); ax.axis("off")
fig.tight_layout()
out_dir = os.environ.get("IMGPROC_NOTEBOOK_OUT") or "."
fig.savefig(os.path.join(out_dir, "denoise_methods.png"), dpi=80)"""),
    ("md", """Quality against time: up and to the left is better. NL-means costs the most here
and gives the most; the median is nearly free but only pays off on impulse noise
(see `benchmarks/RESULTS.md` for the salt-and-pepper and JPEG cases and for OpenCV,
scikit-image and BM3D)."""),
    ("code", """fig, ax = plt.subplots(figsize=(7, 4.5))
for name, (_, p, s, ms) in results.items():
    ax.scatter(ms, p, s=40)
    ax.annotate(name, (ms, p), textcoords="offset points", xytext=(-20, -14) if name == "auto" else (5, 4), fontsize=9)
ax.axhline(imgproc.psnr(clean, noisy), color="gray", ls="--", lw=1)
ax.annotate("noisy input", (min(r[3] for r in results.values()), imgproc.psnr(clean, noisy)), xytext=(0, 4), textcoords="offset points", fontsize=9, color="gray")
ax.set_xscale("log"); ax.set_xlim(right=8 * max(r[3] for r in results.values())); ax.set_xlabel("time per call, ms (log scale, CPU)"); ax.set_ylabel("PSNR, dB")
ax.set_title("Denoising the cat: quality against time")
fig.tight_layout()
fig.savefig(os.path.join(out_dir, "denoise_quality_vs_time.png"), dpi=80)"""),
    ("md", """Every method is also a pipeline stage, so it can run inside a larger program or on a
folder from the command line (`imgproc denoise photos/ out/ --method auto --verbose`)."""),
    ("code", """pipe = imgproc.Pipeline([{"op": "denoise", "method": "auto"}, {"op": "unsharp_mask", "amount": 0.3}])
print(pipe.to_spec())
out = np.asarray(pipe(noisy))
print(f"auto + light unsharp mask: {imgproc.psnr(clean, out):.2f} dB")"""),
]


if __name__ == "__main__":
    write(CELLS, "03_denoise_methods.ipynb")
