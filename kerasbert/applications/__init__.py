"""Task models: a backbone plus a head, trained and used on DataFrames, saved as one .keras file."""

from kerasbert._quiet_start import import_tensorflow_quietly

import_tensorflow_quietly()  # before the first TensorFlow import below

from kerasbert.applications.bert_classifier import BertClassifier
from kerasbert.applications.bert_masked_lm import BertMaskedLM
from kerasbert.applications.bert_multiple_choice import BertMultipleChoice
from kerasbert.applications.bert_multitask import BertMultiTask
from kerasbert.applications.bert_pretrainer import BertPretrainer
from kerasbert.applications.bert_question_answerer import BertQuestionAnswerer
from kerasbert.applications.bert_seq2seq import BertSeq2Seq, TargetTooLongError
from kerasbert.applications.bert_text_encoder import BertTextEncoder
from kerasbert.applications.bert_token_classifier import BertTokenClassifier
from kerasbert.applications.distiller import Distiller
from kerasbert.applications.electra_pretrainer import ElectraPretrainer
from kerasbert.applications.student_models import student_from_teacher
from kerasbert.applications.task import Task
from kerasbert.applications.task_files import load_task
