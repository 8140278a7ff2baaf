/**
 * The engine-neutral RDMA shuffle engine: registered map outputs, metadata over SRQ, batched
 * RDMA_READ chains and the completion-queue poller. Spark and Hadoop adapters sit on it.
 *
 * <p>In progress (see the shuffle-core issue): {@link org.rdmashuffle.core.server.MapOutputRegistry}
 * (map outputs registered over their files, within a memory limit) is built; the control plane,
 * metadata protocol, fetcher and poller are not yet.
 */
package org.rdmashuffle.core;
