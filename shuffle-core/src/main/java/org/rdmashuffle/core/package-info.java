/**
 * The engine-neutral RDMA shuffle engine: registered map outputs, metadata over SRQ, batched
 * RDMA_READ chains and the completion-queue poller. Spark and Hadoop adapters sit on it.
 *
 * <p>In progress (see the shuffle-core issue): {@link org.rdmashuffle.core.server.MapOutputRegistry}
 * (map outputs registered over their files, within a memory limit) and the metadata messages with
 * their bounded, validating codec ({@link org.rdmashuffle.core.protocol.MessageCodec}), and the SRQ's
 * registered receive buffers ({@link org.rdmashuffle.core.transport.ReceivePool}), and the
 * authenticated control plane ({@link org.rdmashuffle.core.control.ControlServer},
 * {@link org.rdmashuffle.core.control.ControlClientPool}) are built; the QP endpoint exchange over
 * it, the fetcher and the poller are not yet.
 */
package org.rdmashuffle.core;
