"""Axial position embeddings (Reformer; HF `AxialPositionEmbeddings`): a position table factorised over a grid."""

import math

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="kerasbert")
class AxialPositionEmbedding(keras.layers.Layer):
    """Position `p` of a grid `shape` (row-major: `p = i * shape[1] + j` for two axes) is embedded as the
    concatenation of one vector per axis (`dims[0]` wide for row `i`, `dims[1]` for column `j`, ...), so a table
    of `prod(shape)` positions costs `sum(shape[a] * dims[a])` numbers. Weight `a` is stored as HF stores it:
    `[1, ..., shape[a], ..., 1, dims[a]]`. Returns the first `T` positions' vectors, `[1, T, sum(dims)]`; `T` may
    not exceed `prod(shape)`.

    Args:
        shape: the grid (HF `axial_pos_shape`). dims: each axis's width (HF `axial_pos_embds_dim`).
        initializer_stddev: the weights' normal initialiser (HF `axial_norm_std`).

    Examples:
        >>> table = AxialPositionEmbedding(shape=(4, 8), dims=(4, 12))
        >>> tuple(table(ops.ones((2, 16, 16))).shape)
        (1, 16, 16)
    """

    def __init__(self, shape, dims, initializer_stddev=1.0, **kwargs):
        super().__init__(**kwargs)
        if len(shape) != len(dims):
            raise ValueError(f"shape={list(shape)} and dims={list(dims)} must have one entry per axis "
                             "(HF axial_pos_shape, axial_pos_embds_dim).")
        self.shape = list(shape)
        self.dims = list(dims)
        self.initializer_stddev = initializer_stddev
        initializer = keras.initializers.RandomNormal(stddev=initializer_stddev)
        self.axis_weights = []
        for axis, dim in enumerate(self.dims):
            weight_shape = [1] * len(self.shape)
            weight_shape[axis] = self.shape[axis]
            self.axis_weights.append(self.add_weight(shape=(*weight_shape, dim), initializer=initializer,
                                                     name=f"axis_{axis}"))

    def call(self, x):
        """The position vectors of `x`'s sequence axis 1."""
        length = ops.shape(x)[1]
        if isinstance(length, int) and length > math.prod(self.shape):
            raise ValueError(f"sequence length {length} exceeds the {math.prod(self.shape)} positions of the axial "
                             f"grid {self.shape}; use a larger axial_pos_shape (HF) or a shorter input.")
        grid = ops.concatenate([ops.broadcast_to(w, (*self.shape, w.shape[-1])) for w in self.axis_weights], axis=-1)
        return ops.reshape(grid, (1, -1, sum(self.dims)))[:, :length]

    def get_config(self):
        return {**super().get_config(), "shape": self.shape, "dims": self.dims,
                "initializer_stddev": self.initializer_stddev}
