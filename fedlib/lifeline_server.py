"""Imported first by the fork server of `fedlib.fanout.process_pool` (fanout.PRELOAD), and by nothing else: the
server exits when the process that started it dies, and with it the pool workers it forked (they die with their
parent, the server: fedlib/lifeline.py). Without it a SIGKILLed driver left the server and its workers computing,
since each worker holds the pipe whose closing tells the server to stop."""
from fedlib.lifeline import die_with_parent

die_with_parent()
