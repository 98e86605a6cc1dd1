"""Unsigned integers stored in as few bytes as their width needs.

NumPy has no 3-, 5- or 7-byte integer, so a value of `bits` bits (rounded up to
a nibble) is split into planes of 32, 16, 8 and 4 bits, most significant
first: 44 bits take 4 + 1 + 0.5 bytes, 28 bits 2 + 1 + 0.5. Each plane is an
ordinary array (the 4-bit one holds two values a byte), so reading a batch of
positions is one gather per plane, and the first plane alone orders values
as far as its bits go (what `visited.py` bisects on).
"""

from __future__ import annotations

import numpy as np

U64 = np.uint64
_CHUNK = 1 << 20  # values encoded at a time (even: nibble pairs stay within a chunk)
_PLANES: tuple[tuple[int, type[np.unsignedinteger]], ...] = (
    (32, np.uint32), (16, np.uint16), (8, np.uint8), (4, np.uint8))


class PackedUInts:
    """`len(values)` unsigned integers below 2**bits, in bits/8 bytes each."""

    def __init__(self, values: np.ndarray, bits: int):
        self.n = len(values)
        self.bits = -(-bits // 4) * 4
        self.planes: list[tuple[int, int, np.ndarray]] = []  # (shift, width, array)
        left = self.bits
        for width, dtype in _PLANES:
            while left >= width:
                left -= width
                size = (self.n + 1) // 2 if width == 4 else self.n
                self.planes.append((left, width, np.empty(size, dtype=dtype)))
        for lo in range(0, self.n, _CHUNK):  # a chunk at a time: no temporaries of n words
            self._encode(lo, values[lo:lo + _CHUNK].astype(U64))

    def _encode(self, lo: int, values: np.ndarray) -> None:
        for shift, width, array in self.planes:
            part = values >> U64(shift) if shift else values
            if shift + width < 64:
                part = part & U64((1 << width) - 1)
            if width == 4:  # two nibbles a byte
                part = np.append(part, U64(0)) if len(part) % 2 else part
                array[lo // 2:lo // 2 + len(part) // 2] = part[0::2] | (part[1::2] << U64(4))
            else:
                array[lo:lo + len(part)] = part

    def __len__(self) -> int:
        return self.n

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for _, _, a in self.planes)

    @property
    def top_shift(self) -> int:
        """Where the first plane's bits start: `top(i) == get(i) >> top_shift`."""
        return self.planes[0][0] if self.planes else 0

    @property
    def top_dtype(self) -> np.dtype:
        return self.planes[0][2].dtype if self.planes else np.dtype(np.uint8)

    def top(self, idx: np.ndarray) -> np.ndarray:
        """The first plane's part of the values at `idx` (zeros when there is none)."""
        if not self.planes:
            return np.zeros(len(idx), dtype=np.uint8)
        return _plane_at(self.planes[0], idx)

    def get(self, idx: np.ndarray) -> np.ndarray:
        """The values at positions `idx`, as uint64."""
        out = np.zeros(len(idx), dtype=U64)
        for plane in self.planes:
            part = _plane_at(plane, idx).astype(U64)
            out |= part << U64(plane[0]) if plane[0] else part
        return out

    def decode(self, lo: int = 0, hi: int | None = None) -> np.ndarray:
        """The values at positions lo..hi-1 (all of them by default), as uint64;
        `lo` is even, so a range starts on a whole byte of the nibble plane."""
        hi = self.n if hi is None else min(hi, self.n)
        assert lo % 2 == 0 and 0 <= lo <= hi
        out = np.zeros(hi - lo, dtype=U64)
        for shift, width, array in self.planes:
            if width == 4:
                packed = array[lo // 2:(hi + 1) // 2]
                part = np.empty(2 * len(packed), dtype=np.uint8)
                part[0::2] = packed & np.uint8(15)
                part[1::2] = packed >> np.uint8(4)
                array = part[:hi - lo]
            else:
                array = array[lo:hi]
            wide = array.astype(U64)
            if shift:
                wide <<= U64(shift)
            out |= wide
        return out


def _plane_at(plane: tuple[int, int, np.ndarray], idx: np.ndarray) -> np.ndarray:
    _, width, array = plane
    if width != 4:
        return array[idx]
    return (array[idx >> 1] >> ((idx & 1) << 2).astype(np.uint8)) & np.uint8(15)
