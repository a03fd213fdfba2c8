"""Offline RGB image stand-ins cut from the sample photographs that ship inside the scikit-image and scikit-learn
wheels (no download): `photo32` (CIFAR's 3x32x32) and `photo64` (TinyImageNet's 3x64x64). docs/datasets.md.

Rule (fixed; the run seed plays no part):
  1. Ten photographs (PHOTOS) are read through the packages' own loaders and resized (bilinear, antialiased) so
     that the shorter side is `short_side` pixels.
  2. Classes: `photo32` has one class per photograph. `photo64` splits each photograph into two halves across its
     longer side (left/right, or top/bottom when it is portrait) and has one class per half: 20 classes, where the
     two halves of one photograph share colours and lighting, so colour statistics alone do not separate them.
  3. Each class region is cut into a grid of `tile` x `tile` tiles (a remainder strip at the right/bottom edge is
     unused). A seeded random `test_fraction` of the tiles of each region are test tiles; every other tile is train.
  4. A train patch is a `patch` x `patch` window (any position, stride 1) whose pixels all lie in train tiles; a test
     patch one whose pixels all lie in test tiles. `train_per_class` and `test_per_class` windows are drawn without
     replacement from the allowed positions. So no test pixel occurs in any train image.
Images are uint8 [N, 3, P, P] (CIFAR's layout), labels int64; both splits are shuffled with the build seed.
The built arrays are cached as `<data_dir>/<name>/<name>-<key>.npz`, where the key hashes the rule and the package
versions (a decoder change rebuilds); a cold build takes 2-3 CPU seconds, a cached load 0.2-0.8 s.
"""
from __future__ import annotations

import hashlib
import json
import zipfile
from collections.abc import Callable
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import torch

from fedlib.data.base import DatasetSpec, FedDataset


@dataclass(frozen=True)
class Photo:
    name: str
    package: str                       # "skimage" or "sklearn"
    credit: str                        # author / origin and licence, as the package documents it


PHOTOS: tuple[Photo, ...] = (
    Photo("astronaut", "skimage", "NASA (Eileen Collins); public domain"),
    Photo("chelsea", "skimage", "Stefan van der Walt; CC0"),
    Photo("coffee", "skimage", "Rachel Michetti, courtesy of Pikolo Espresso Bar; CC0"),
    Photo("hubble_deep_field", "skimage", "NASA / HubbleSite; public domain"),
    Photo("immunohistochemistry", "skimage", "Center for Microscopy and Molecular Imaging (CMMI); no known "
          "copyright restrictions"),
    Photo("retina", "skimage", "Mikael Häggström, Wikimedia Commons; CC0 1.0"),
    Photo("rocket", "skimage", "SpaceX (DSCOVR launch on Falcon 9); public domain"),
    Photo("stereo_motorcycle", "skimage", "left view; Middlebury 2014 stereo benchmark (Scharstein et al., GCPR "
          "2014), down-sampled by scikit-image; redistributed in scikit-image's wheel, no separate licence stated"),
    Photo("china", "sklearn", "danielbuechele on Flickr; CC BY 2.0"),
    Photo("flower", "sklearn", "vultilion on Flickr; CC BY 2.0"),
)


@dataclass(frozen=True)
class PhotoSet:
    name: str
    patch: int
    short_side: int
    tile: int
    halves: bool
    train_per_class: int
    test_per_class: int
    test_fraction: float = 0.2
    seed: int = 0

    @property
    def num_classes(self) -> int:
        return len(PHOTOS) * (2 if self.halves else 1)


PHOTO32 = PhotoSet("photo32", patch=32, short_side=256, tile=48, halves=False, train_per_class=500,
                   test_per_class=100)
PHOTO64 = PhotoSet("photo64", patch=64, short_side=384, tile=96, halves=True, train_per_class=250,
                   test_per_class=50)


# ---------------------------------------------------------------------------------------------- source photographs
def read_photo(photo: Photo) -> np.ndarray:
    """The photograph as uint8 [H, W, 3], through its package's loader (files inside the wheel; no download)."""
    if photo.package == "sklearn":
        from sklearn.datasets import load_sample_image

        return np.asarray(load_sample_image(f"{photo.name}.jpg"), dtype=np.uint8)
    import skimage.data

    image = getattr(skimage.data, photo.name)()
    image = image[0] if isinstance(image, tuple) else image           # stereo_motorcycle: (left, right, disparity)
    return np.asarray(image, dtype=np.uint8)[..., :3]


def resize_short_side(image: np.ndarray, short: int) -> np.ndarray:
    """Resize [H, W, 3] uint8 so min(H, W) == short: bilinear with antialiasing (PIL's bilinear filter, to within one
    grey level), in float64, rounded. Shrinking averages over the whole footprint; enlarging interpolates (a box
    filter would repeat rows and columns, a tell-tale of the one enlarged photograph)."""
    h, w = image.shape[:2]
    scale = short / min(h, w)
    size = (max(short, round(h * scale)), max(short, round(w * scale)))
    x = torch.tensor(image, dtype=torch.float64).permute(2, 0, 1)[None]
    out = torch.nn.functional.interpolate(x, size=size, mode="bilinear", antialias=True, align_corners=False)
    return out.round_().clamp_(0, 255)[0].permute(1, 2, 0).numpy().astype(np.uint8)


def class_regions(image: np.ndarray, halves: bool) -> list[np.ndarray]:
    """The whole image, or its two halves across the longer side (left/right when landscape or square)."""
    if not halves:
        return [image]
    h, w = image.shape[:2]
    if w >= h:
        return [image[:, : w // 2], image[:, w // 2:]]
    return [image[: h // 2], image[h // 2:]]


# ---------------------------------------------------------------------------------------------- the patch rule
def test_tile_mask(h: int, w: int, tile: int, fraction: float, rng: np.random.Generator) -> np.ndarray:
    """int8 [h, w] pixel mask: 1 in test tiles, 0 in train tiles, -1 in the unused edge strip."""
    rows, cols = h // tile, w // tile
    n_test = max(1, round(fraction * rows * cols))
    is_test = np.zeros(rows * cols, dtype=np.int8)
    is_test[rng.permutation(rows * cols)[:n_test]] = 1
    mask = np.full((h, w), -1, dtype=np.int8)
    mask[: rows * tile, : cols * tile] = is_test.reshape(rows, cols).repeat(tile, 0).repeat(tile, 1)
    return mask


def window_positions(mask: np.ndarray, value: int, size: int) -> np.ndarray:
    """[M, 2] top-left (y, x) of every size x size window whose mask pixels all equal `value` (row-major order)."""
    hit = np.pad((mask == value).astype(np.int64), ((1, 0), (1, 0))).cumsum(0).cumsum(1)
    sums = hit[size:, size:] - hit[:-size, size:] - hit[size:, :-size] + hit[:-size, :-size]
    return np.argwhere(sums == size * size)


def cut_patches(region: np.ndarray, positions: np.ndarray, size: int) -> np.ndarray:
    """uint8 [M, 3, size, size] windows of [H, W, 3] at the given top-left positions."""
    offsets = np.arange(size)
    rows = positions[:, 0, None] + offsets                          # [M, size]
    cols = positions[:, 1, None] + offsets
    return np.ascontiguousarray(region[rows[:, :, None], cols[:, None, :]].transpose(0, 3, 1, 2))


@dataclass(frozen=True)
class RegionPlan:
    """One class region, its tile mask and the top-left corners of its train and test windows."""

    region: np.ndarray                 # uint8 [H, W, 3]
    mask: np.ndarray                   # int8 [H, W]: 1 test tile, 0 train tile, -1 unused edge
    train: np.ndarray                  # [train_per_class, 2] (y, x)
    test: np.ndarray                   # [test_per_class, 2]


def plan_region(region: np.ndarray, spec: PhotoSet, rng: np.random.Generator) -> RegionPlan:
    """Test tiles and the train/test windows of one class region (module docstring, steps 3-4)."""
    mask = test_tile_mask(region.shape[0], region.shape[1], spec.tile, spec.test_fraction, rng)
    picked = []
    for value, count in ((0, spec.train_per_class), (1, spec.test_per_class)):
        allowed = window_positions(mask, value, spec.patch)
        if len(allowed) < count:
            raise ValueError(f"{spec.name}: only {len(allowed)} {'test' if value else 'train'} windows in a region "
                             f"of {region.shape[:2]}, need {count}")
        picked.append(allowed[np.sort(rng.choice(len(allowed), count, replace=False))])
    return RegionPlan(region, mask, picked[0], picked[1])


def plan_photo_set(spec: PhotoSet, photos: tuple[np.ndarray, ...],
                   rng: np.random.Generator) -> list[RegionPlan]:
    """The plan of every class region, in label order, from the photographs (uint8 [H, W, 3]) under `spec`."""
    regions = [r for p in photos for r in class_regions(resize_short_side(p, spec.short_side), spec.halves)]
    return [plan_region(r, spec, rng) for r in regions]


def build_photo_arrays(spec: PhotoSet, photos: tuple[np.ndarray, ...]) -> tuple[np.ndarray, ...]:
    """(x_train, y_train, x_test, y_test) from the ten photographs under `spec`'s rule; each split is shuffled."""
    rng = np.random.default_rng(spec.seed)
    plans = plan_photo_set(spec, photos, rng)
    out = []
    for split in ("train", "test"):
        x = np.concatenate([cut_patches(p.region, getattr(p, split), spec.patch) for p in plans])
        y = np.concatenate([np.full(len(getattr(p, split)), c, dtype=np.int64) for c, p in enumerate(plans)])
        order = rng.permutation(len(y))
        out += [x[order], y[order]]
    return tuple(out)


# ---------------------------------------------------------------------------------------------- cache and loader
def _versions() -> dict[str, str]:
    """Versions of the packages that ship, decode and resize the photographs (read from their metadata: no
    import; Pillow decodes them inside the packages' loaders)."""
    from importlib.metadata import version

    return {"skimage": version("scikit-image"), "sklearn": version("scikit-learn"), "pillow": version("pillow"),
            "torch": version("torch")}


BUILD_VERSION = 1              # bump whenever the build code changes what a PhotoSet produces


def cache_key(spec: PhotoSet) -> str:
    """Hash of the rule, the build version, the photograph list and the package versions that decode them."""
    blob = json.dumps({"spec": asdict(spec), "build": BUILD_VERSION, "photos": [(p.name, p.package) for p in PHOTOS],
                       "versions": _versions()}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def photo_cache_path(data_dir: Path, spec: PhotoSet) -> Path:
    return Path(data_dir) / spec.name / f"{spec.name}-{cache_key(spec)}.npz"


KEYS = ("x_train", "y_train", "x_test", "y_test")


def _fits(spec: PhotoSet, arrays: tuple[np.ndarray, ...]) -> bool:
    """Do the arrays have the shapes, dtypes and label range that `spec` builds?"""
    xtr, ytr, xte, yte = arrays
    k, p = spec.num_classes, spec.patch
    return (xtr.dtype == xte.dtype == np.uint8 and ytr.dtype == yte.dtype == np.int64
            and xtr.shape == (k * spec.train_per_class, 3, p, p) and xte.shape == (k * spec.test_per_class, 3, p, p)
            and ytr.shape == xtr.shape[:1] and yte.shape == xte.shape[:1]
            and all(0 <= int(y.min()) and int(y.max()) < k for y in (ytr, yte)))


def _read_cache(path: Path, spec: PhotoSet) -> tuple[np.ndarray, ...] | None:
    """The cached arrays, or None when the file is absent, unreadable or not what `spec` builds (then it is rebuilt
    and rewritten)."""
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = tuple(z[k] for k in KEYS)
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
        return None
    return arrays if _fits(spec, arrays) else None


def _write_cache(path: Path, arrays: tuple[np.ndarray, ...]) -> None:
    """Best effort: an unwritable data directory only costs a rebuild next time."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{np.random.default_rng().integers(1 << 30)}.tmp.npz")
        np.savez(tmp, **dict(zip(KEYS, arrays)))
        tmp.replace(path)
    except OSError:
        pass


@lru_cache(maxsize=2)
def photo_arrays(spec: PhotoSet, data_dir: Path | None) -> tuple[tuple[np.ndarray, ...], str]:
    """The built arrays (cached on disk under data_dir when given, and per process) and where they came from."""
    path = photo_cache_path(data_dir, spec) if data_dir is not None else None
    arrays = _read_cache(path, spec) if path is not None else None
    if arrays is not None:
        return arrays, f"cache {path}"
    arrays = build_photo_arrays(spec, tuple(read_photo(p) for p in PHOTOS))
    if path is not None:
        _write_cache(path, arrays)
    return arrays, "built"


def channel_stats(x: np.ndarray) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Per-channel mean and std of uint8 [N, C, H, W] images scaled to [0, 1], exact from 256-bin histograms."""
    levels = np.arange(256, dtype=np.float64) / 255.0
    means, stds = [], []
    for c in range(x.shape[1]):
        p = np.bincount(x[:, c].reshape(-1), minlength=256) / x[:, c].size
        mean = float(p @ levels)
        means.append(mean)
        stds.append(float(np.sqrt(p @ (levels - mean) ** 2)))
    return tuple(means), tuple(stds)


def load_photo_dataset(spec: PhotoSet, data_dir: Path | None = None, seed: int = 0) -> FedDataset:
    (xtr, ytr, xte, yte), origin = photo_arrays(spec, Path(data_dir) if data_dir is not None else None)
    mean, std = channel_stats(xtr)
    versions = ", ".join(f"{k} {v}" for k, v in _versions().items())
    return FedDataset(
        name=spec.name, task="classification",
        x_train=torch.from_numpy(xtr.copy()), y_train=torch.from_numpy(ytr.copy()),
        x_test=torch.from_numpy(xte.copy()), y_test=torch.from_numpy(yte.copy()),
        num_classes=spec.num_classes, mean=mean, std=std,
        source=f"{spec.patch}x{spec.patch} patches of the scikit-image/scikit-learn sample photographs "
               f"({'two halves per photograph' if spec.halves else 'one class per photograph'}, {spec.tile}-px "
               f"train/test tiles, seed {spec.seed}; {versions}; {origin})",
    )


def _loader(spec: PhotoSet) -> Callable[[Path, int], FedDataset]:
    return lambda data_dir, seed=0: load_photo_dataset(spec, data_dir, seed)


PHOTO_DATASETS: tuple[DatasetSpec, ...] = (
    DatasetSpec("photo32", f"32x32 RGB patches of 10 sample photographs (skimage/sklearn wheels), 10 classes, "
                f"{PHOTO32.train_per_class * 10}/{PHOTO32.test_per_class * 10}, train/test from disjoint tiles "
                "(CIFAR stand-in)", _loader(PHOTO32), "cnn", True),
    DatasetSpec("photo64", f"64x64 RGB patches of the same photographs, 20 classes (two halves each), "
                f"{PHOTO64.train_per_class * 20}/{PHOTO64.test_per_class * 20}, disjoint tiles "
                "(TinyImageNet stand-in)", _loader(PHOTO64), "resnet18", True),
)
