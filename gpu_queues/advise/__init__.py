"""The quota advisor (`gpuq advise`, `make advise`, docs/advisor.md): searches a stack's queue
settings (per team and flavor the GPU nominalQuota, borrowingLimit and lendingLimit, and cohort
membership), within the hardware the stack declares and the policy pack, with the fast what-if
(gpu_queues.whatif.fast) as its judge, and writes the proposal as a stack file a reviewer can
take as it is. goal.py: the objective and GOAL's grammar; space.py: the settings and the
bounds; policy.py: the policy pack on a candidate; search.py: the search; advice.py: what OUT
gets; preview.py: `pulumi preview` of the proposal; cli.py: the command."""
