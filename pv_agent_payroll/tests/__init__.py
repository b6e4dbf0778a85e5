from . import test_parameter_check
