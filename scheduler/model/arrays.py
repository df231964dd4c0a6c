"""numpy array types shared by every layer (node rows, masks, scores, status codes)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int64]
CodeArray = npt.NDArray[np.uint8]
