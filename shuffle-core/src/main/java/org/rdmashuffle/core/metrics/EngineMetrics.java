package org.rdmashuffle.core.metrics;

import java.util.Map;

import org.rdmashuffle.core.EngineCounters;
import org.rdmashuffle.verbs.WorkCompletionStatus;

/**
 * Everything an operator's metrics system gets from one engine, at one moment: what it runs on, what
 * it fetched and served, what it registered, which completions failed, and what it holds now. The
 * adapters publish it (Spark's metrics system through {@code RdmaShufflePlugin}, Hadoop's metrics2 in
 * the NodeManager's services); the engine itself depends on no metrics library. Counts are totals
 * since the engine started, never reset.
 *
 * @param provider the verbs provider ({@code libibverbs} or {@code software})
 * @param device the device the engine opened
 * @param softwareDevice which kernel software device that is ({@code rxe}, {@code siw}), "" for a hardware one
 *        or the software provider's ({@code org.rdmashuffle.verbs.Carrier})
 * @param gid the GID its connections use ("" where the provider has none) and why it was chosen
 * @param memory how it registers memory: pinned or on demand, and why
 * @param pinnableBytes the memlock limit it runs under, or -1 where nothing limits what it pins
 * @param fetches what it fetched (an executor's engine; zeros for a node's service)
 * @param mapOutputRegistrations its map outputs' registrations, every application present and past
 * @param bufferRegistrations its fetch buffers' registrations
 * @param served what reducers were answered and refused, every application present and past
 * @param servedByApplication the same for each application present now (a node's service)
 * @param completionErrors failed work completions by status
 * @param now what it holds now (connections, reads in flight, registered bytes)
 */
public record EngineMetrics(String provider, String device, String softwareDevice, String gid, String memory, long pinnableBytes,
                            FetchCounts.Snapshot fetches, RegistrationCounts.Snapshot mapOutputRegistrations,
                            RegistrationCounts.Snapshot bufferRegistrations, ServedCounts.Snapshot served,
                            Map<String, ServedCounts.Snapshot> servedByApplication,
                            Map<WorkCompletionStatus, Long> completionErrors, EngineCounters now) {
}
