/**
 * The engine-neutral RDMA shuffle engine: registered map outputs, metadata over SRQ, batched
 * RDMA_READ chains and the completion-queue poller. Spark and Hadoop adapters sit on it.
 *
 * <p>{@link org.rdmashuffle.core.RdmaShuffleEngine} is a façade over three parts, one package each,
 * layered (docs/architecture.md, "Packages"; {@code LayeringTest} fails a cycle or an upward import):
 * <ul>
 *   <li>{@code transport}: {@link org.rdmashuffle.core.transport.TransportContext} — the device, the
 *       completion pollers and the {@link org.rdmashuffle.core.transport.CompletionRouter} that hands
 *       each completion to its connection's {@link org.rdmashuffle.core.transport.ConnectionHandler},
 *       the connection table, metadata sends, per-application device resources
 *       ({@link org.rdmashuffle.core.transport.TenantDomain});
 *   <li>{@code server}: {@link org.rdmashuffle.core.server.ServeService} — served applications'
 *       outputs ({@link org.rdmashuffle.core.server.MapOutputRegistry}), the control server, answering
 *       fetch requests;
 *   <li>{@code client}: {@link org.rdmashuffle.core.client.FetchService} — fetch calls, connections to
 *       peers and their {@link org.rdmashuffle.core.client.PeerFetcher}s, fetch buffers and budget.
 * </ul>
 * Below them: {@code protocol} (wire records and codecs), {@code control} (the authenticated
 * control plane), {@code buffer}, {@code config}. Above the engine: {@code service} (the Spark-free
 * server of Spark's outputs that both adapters use).
 */
package org.rdmashuffle.core;
