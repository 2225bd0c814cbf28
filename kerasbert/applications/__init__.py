"""Task models: a backbone plus a head, trained and used on DataFrames, saved as one .keras file."""

from kerasbert.applications.bert_classifier import BertClassifier
from kerasbert.applications.bert_token_classifier import BertTokenClassifier
from kerasbert.applications.task import Task
