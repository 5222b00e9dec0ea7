"""``torch.amp``: autocast and GradScaler, and the deprecated ``torch.cuda.amp`` / ``torch.cpu.amp`` spellings
(``_aliases``), which the package namespace hangs under ``cuda`` and ``cpu``."""
from . import _aliases
from ._amp_foreach import _amp_foreach_non_finite_check_and_unscale_, _amp_update_scale_
from .autocast_mode import (autocast, autocast_decrement_nesting, autocast_increment_nesting, clear_autocast_cache,
                            custom_bwd, custom_fwd, get_autocast_dtype, is_autocast_available,
                            is_autocast_cache_enabled, is_autocast_enabled, set_autocast_cache_enabled,
                            set_autocast_dtype, set_autocast_enabled)
from .grad_scaler import GradScaler

__all__ = ["autocast", "custom_bwd", "custom_fwd", "get_autocast_dtype", "is_autocast_available", "GradScaler",
           "_amp_foreach_non_finite_check_and_unscale_", "_amp_update_scale_", "_aliases",
           "autocast_decrement_nesting", "autocast_increment_nesting", "clear_autocast_cache",
           "is_autocast_cache_enabled", "is_autocast_enabled", "set_autocast_cache_enabled", "set_autocast_dtype",
           "set_autocast_enabled"]
