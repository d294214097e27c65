"""Type stubs of the clustertwin package: the public API."""
from . import frames as frames
from . import plots as plots
from .accuracy import accuracy as accuracy
from .api import Result as Result
from .api import Scenario as Scenario
from .api import ScenarioError as ScenarioError
from .api import calibrate as calibrate
from .api import export_chakra as export_chakra
from .api import load as load
from .api import load_trace as load_trace
from .api import run as run
from .api import schema as schema
from .optimize import optimize as optimize
from .sweep import sweep as sweep

__all__ = ["Result", "Scenario", "ScenarioError", "accuracy", "calibrate", "export_chakra", "frames", "load", "load_trace", "optimize",
           "plots", "run", "schema", "sweep"]
