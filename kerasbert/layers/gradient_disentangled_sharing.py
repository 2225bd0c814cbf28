"""GradientDisentangledSharing: DeBERTa-v3's gradient-disentangled embedding sharing (GDES)."""

import contextlib

import keras
import numpy as np
from keras import ops


@keras.saving.register_keras_serializable(package="kerasbert")
class GradientDisentangledSharing(keras.layers.Layer):
    """Runs a DeBERTa discriminator whose token table is `stop_gradient(E_G) + delta` (He et al., 2023, section
    3.2: DeBERTa-v3's replaced-token pre-training).

    `E_G` is the generator's token table (`shared`, a `keras.layers.Embedding`): the generator's masked-LM loss
    alone trains it, the stop-gradient keeping the discriminator's loss out. `delta` (this layer's weight, zeros
    when the generator starts as a copy of the discriminator's table) is trained by the discriminator's loss
    alone. So the two models share the embedding without their gradients pulling it two ways. While this layer
    runs `backbone`, the backbone's own token table is not read (`DebertaEmbedding.token_table`); `fold()`
    writes `E_G + delta` into it, the table the trained discriminator keeps.

    `backbone` and `shared` are links (not configuration): the model that owns all three re-links them when it
    is loaded, as `ElectraGenerator`'s embedding.

    Call args:
        inputs: the backbone's inputs (`token_ids`, `segment_ids`, `padding_mask`). Returns its outputs.

    Examples:
        >>> sharing = GradientDisentangledSharing(discriminator, generator.backbone.token_embedding)
        >>> outputs = sharing({"token_ids": ids, "segment_ids": segments, "padding_mask": mask})
        >>> sharing.fold()   # after training: the discriminator's table is E_G + delta
    """

    def __init__(self, backbone, shared, **kwargs):
        super().__init__(**kwargs)
        self.backbone = backbone
        self.shared = shared
        shape = tuple(shared.embeddings.shape)
        own = tuple(backbone.token_embedding.embeddings.shape)
        if shape != own:
            raise ValueError(f"The generator's token table {shape} cannot be shared with the discriminator's {own}: "
                             "gradient-disentangled sharing adds them, so the vocabulary and width must be equal.")
        self.delta = self.add_weight(shape=shape, initializer="zeros", name="delta")

    def table(self):
        """`stop_gradient(E_G) + delta`: the discriminator's token table."""
        return ops.stop_gradient(ops.convert_to_tensor(self.shared.embeddings)) + self.delta

    def call(self, inputs):
        embedding = self.backbone.embedding
        embedding.token_table = self.table
        try:
            return self.backbone(inputs)
        finally:
            embedding.token_table = None

    def restart_from_backbone(self):
        """Set `delta = E_D - E_G`, so the discriminator reads its own table (`E_D`) again: after weights are
        loaded into either model."""
        own = np.asarray(self.backbone.token_embedding.embeddings.numpy(), "float32")
        self.delta.assign(own - np.asarray(self.shared.embeddings.numpy(), "float32"))

    def fold(self):
        """Write `E_G + delta` into the discriminator's own token table."""
        merged = ops.convert_to_tensor(self.shared.embeddings) + ops.convert_to_tensor(self.delta)
        self.backbone.token_embedding.embeddings.assign(merged)

    @contextlib.contextmanager
    def while_training(self):
        """While training: the discriminator's own table out of the trainable variables (it is not read);
        afterwards, as it was, holding `E_G + delta` (`fold`)."""
        own = self.backbone.token_embedding.embeddings
        trainable = own.trainable
        own.trainable = False
        try:
            yield
        finally:
            own.trainable = trainable
            self.fold()

    def get_config(self):
        """Only the name: `backbone` and `shared` are links that the owner restores."""
        return {"name": self.name, "trainable": self.trainable}
