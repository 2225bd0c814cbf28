"""Task models: a backbone plus a head, trained and used on DataFrames, saved as one .keras file.

The base is `kerasbert.tasks.task.Task` (its docstring lists the hooks a task model overrides); each task model
is one file here.
"""

from kerasbert._quiet_start import import_tensorflow_quietly

import_tensorflow_quietly()  # before the first TensorFlow import below

from kerasbert.tasks.bert_classifier import BertClassifier
from kerasbert.tasks.bert_cross_encoder import BertCrossEncoder
from kerasbert.tasks.bert_masked_lm import BertMaskedLM
from kerasbert.tasks.bert_multiple_choice import BertMultipleChoice
from kerasbert.tasks.bert_multitask import BertMultiTask
from kerasbert.tasks.bert_pretrainer import BertPretrainer
from kerasbert.tasks.bert_question_answerer import BertQuestionAnswerer
from kerasbert.tasks.bert_seq2seq import BertSeq2Seq, TargetTooLongError
from kerasbert.tasks.bert_text_encoder import BertTextEncoder
from kerasbert.tasks.bert_token_classifier import BertTokenClassifier
from kerasbert.tasks.deberta_v3_pretrainer import DebertaV3Pretrainer
from kerasbert.tasks.electra_pretrainer import ElectraPretrainer
from kerasbert.tasks.long_inputs import LongInputs
from kerasbert.tasks.memory_reading import MemoryReader
from kerasbert.tasks.task import Task
from kerasbert.tasks.task_files import load_task
