/* Memory bandwidth probe for the bench's roofline. */
#ifndef NIB_CLI_MEMBW_H
#define NIB_CLI_MEMBW_H

/* Best-of-5 streaming-read bandwidth in GB/s with n_threads (<= 0: all CPUs). */
double nib_membw_probe_gbs(int n_threads);

#endif
