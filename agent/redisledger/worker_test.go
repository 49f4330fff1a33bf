package redisledger

const workerEnv = "REDISLEDGER_TEST_WORKER"
