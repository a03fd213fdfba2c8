"""Imported first by the fork server of `fedlib.fanout.process_pool` (fanout.PRELOAD), and by nothing else: the
server exits when the process that started it dies, and with it the pool workers it forked (they die with their
parent, the server: fedlib/lifeline.py). Without it a SIGKILLed driver left the server and its workers computing,
since each worker holds the pipe whose closing tells the server to stop. It also sets the server's process up as
every entry point does (`fedlib.set_up_process`: the CPU path its $FEDLIB_CPU_PATH names, before the rest of PRELOAD
loads torch; malloc), so the workers forked from it start that way."""
import os

import fedlib
from fedlib.lifeline import SERVER_PID, die_with_parent

die_with_parent()
os.environ[SERVER_PID] = str(os.getpid())     # the parent its workers must find (fanout._worker_start)
fedlib.set_up_process()
