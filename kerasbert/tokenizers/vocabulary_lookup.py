"""VocabularyLookup: the token <-> id lookups every kerasbert tokenizer shares."""


class VocabularyLookup:
    """Vocabulary size, token <-> id lookups and the special tokens' ids, for a tokenizer layer that keeps
    `_token_ids` ({token: id}), `_checked_vocabulary()` (the tokens in id order, or an error naming what to do
    when none is set) and the names `unk_token`, `cls_token`, `sep_token`, `pad_token`, `mask_token`.
    Calling the layer tokenises.

    Example:
    >>> class MyTokenizer(VocabularyLookup, keras.layers.Layer): ...
    >>> MyTokenizer(...).token_to_id("[CLS]")
    """

    def vocabulary_size(self):
        return len(self._checked_vocabulary())

    def get_vocabulary(self):
        return list(self._checked_vocabulary())

    def token_to_id(self, token):
        self._checked_vocabulary()
        if token not in self._token_ids:
            raise ValueError(f"Token {token!r} is not in the vocabulary.")
        return self._token_ids[token]

    def id_to_token(self, token_id):
        vocabulary = self._checked_vocabulary()
        if not 0 <= int(token_id) < len(vocabulary):
            raise ValueError(f"Id {token_id} is out of the vocabulary's range [0, {len(vocabulary)}).")
        return vocabulary[int(token_id)]

    @property
    def unk_token_id(self):
        return self.token_to_id(self.unk_token)

    @property
    def cls_token_id(self):
        return self.token_to_id(self.cls_token)

    @property
    def sep_token_id(self):
        return self.token_to_id(self.sep_token)

    @property
    def pad_token_id(self):
        return self.token_to_id(self.pad_token)

    @property
    def mask_token_id(self):
        return self.token_to_id(self.mask_token)

    def call(self, texts):
        return self.tokenize(texts)
