"""Message-weighting policies (SVI+, annealing, global and local tempering): weights on the data plate's factors."""
from .annealing import Annealing as Annealing
from ..inference.policy import Policy as Policy
from .svi_plus import SVIPlus as SVIPlus
from .local_tempering import LocalTempering as LocalTempering
from .tempering import Tempering as Tempering
