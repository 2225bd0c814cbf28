"""Keras warns "Gradients do not exist for variables [...]" at each `fit` whose loss leaves weights unused. Some
heads leave weights unused by design; `weights_unused_by_design()` silences the warning for those alone, so a
warning about any other weight still shows.

- The pooler (`pooler/kernel`, `pooler/bias`) under heads on token states: QA, masked LM, token
  classification, mean pooling, a distilled token classifier.
- XLNet's query-stream mask embedding, and its sequence summary under a QA head.

Examples:
    >>> with weights_unused_by_design():
    ...     keras.Model.fit(model, dataset)
"""

import contextlib
import warnings

POOLER_ONLY_WITHOUT_GRADIENTS = r"Gradients do not exist for variables \['pooler/\w+', 'pooler/\w+'\] when"
XLNET_UNUSED_WITHOUT_GRADIENTS = (r"Gradients do not exist for variables \[(?:'(?:\w+/)?(?:summary/\w+|mask_embedding)'"
                                  r"(?:, )?)+\] when")


@contextlib.contextmanager
def weights_unused_by_design():
    """Silence Keras' missing-gradient warning for the weights listed in the module docstring, inside the block."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=POOLER_ONLY_WITHOUT_GRADIENTS)
        warnings.filterwarnings("ignore", message=XLNET_UNUSED_WITHOUT_GRADIENTS)
        yield
