"""Type stubs of the clustertwin package: the public API."""
from . import frames as frames
from . import plots as plots
from .accuracy import accuracy as accuracy
from .api import Result as Result
from .api import Scenario as Scenario
from .api import ScenarioError as ScenarioError
from .api import InputLimitError as InputLimitError
from .api import limits as limits
from .api import estimate as estimate
from .api import drill as drill
from .api import set_limit as set_limit
from .api import calibrate as calibrate
from .api import export_chakra as export_chakra
from .api import layer_kernels as layer_kernels
from .api import load as load
from .api import load_trace as load_trace
from .api import run as run
from .api import schema as schema
from .compare import compare_nccl_tests as compare_nccl_tests
from .compare import nccl_tests as nccl_tests
from .importers import ImportedScenario as ImportedScenario
from .importers import from_hf_config as from_hf_config
from .importers import from_megatron_args as from_megatron_args
from .importers import from_nemo_config as from_nemo_config
from .layouts import evaluate_layouts as evaluate_layouts
from .metrics import write_openmetrics as write_openmetrics
from .optimize import optimize as optimize
from .planning import plan as plan
from .sweep import sweep as sweep

__all__ = ["ImportedScenario", "InputLimitError", "Result", "Scenario", "ScenarioError", "accuracy", "calibrate", "compare_nccl_tests", "drill", "estimate", "evaluate_layouts", "export_chakra", "frames", "layer_kernels", "from_hf_config", "from_megatron_args", "from_nemo_config", "limits", "nccl_tests",
           "load", "load_trace", "optimize", "plan", "plots", "run", "schema", "set_limit", "sweep", "write_openmetrics"]
