/**
 * The engine-neutral RDMA shuffle engine: registered map outputs, metadata over SRQ, batched
 * RDMA_READ chains and the completion-queue poller. Spark and Hadoop adapters sit on it.
 *
 * <p>In progress (see the shuffle-core issue). Built so far:
 * <ul>
 *   <li>{@code server}: {@link org.rdmashuffle.core.server.MapOutputRegistry}, map outputs registered
 *       over their files within a memory limit, described as blocks;
 *   <li>{@code protocol}: metadata messages with a bounded, validating codec
 *       ({@link org.rdmashuffle.core.protocol.MessageCodec}) and the QP endpoint codec;
 *   <li>{@code transport}: the SRQ's registered receive buffers
 *       ({@link org.rdmashuffle.core.transport.ReceivePool});
 *   <li>{@code control}: the authenticated control plane ({@link org.rdmashuffle.core.control.ControlServer},
 *       {@link org.rdmashuffle.core.control.ControlClientPool}).
 * </ul>
 * Not yet: the connection manager that exchanges QP endpoints over the control plane, the fetcher
 * and the poller.
 */
package org.rdmashuffle.core;
