"""Distillation: a student task model learns from a fitted teacher (soft targets, hidden states, attention maps)."""

from kerasbert._quiet_start import import_tensorflow_quietly

import_tensorflow_quietly()  # before the first TensorFlow import below

from kerasbert.distillation.distiller import Distiller
from kerasbert.distillation.student_models import student_from_teacher
