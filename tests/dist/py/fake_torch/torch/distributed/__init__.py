from .distributed_c10d import (all_gather, all_gather_object, all_reduce, barrier,  # noqa: F401
                               broadcast, destroy_process_group, init_process_group, new_group)
