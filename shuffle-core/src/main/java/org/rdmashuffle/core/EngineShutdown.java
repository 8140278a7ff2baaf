package org.rdmashuffle.core;

import java.io.IOException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import org.rdmashuffle.core.client.FetchSide;
import org.rdmashuffle.core.server.ServeService;
import org.rdmashuffle.core.transport.TransportContext;

/**
 * How an engine's parts are closed: their phases interleaved in the one order that keeps the
 * invariants, whoever closes (the engine's {@code close}, or a start that failed half-way).
 * <ul>
 * <li>No new work first (calls, timer ticks, server and connector threads), then the work under way
 *     (a registration on the timer or a server thread) waited for, boundedly.
 * <li>No queue pair outlives its PD, and no set-up is running when QPs are destroyed: the transport is
 *     quiesced first (set-ups finish within their connect timeout). If it cannot be, the device
 *     resources are left for the process's exit rather than freed under a set-up.
 * <li>Connections, then pollers, then the tenants' SRQs, regions and PDs, then the device: nothing
 *     native is called after what it needs is destroyed, and nothing waits on a peer.
 * </ul>
 */
final class EngineShutdown {
    private static final System.Logger LOG = System.getLogger(RdmaShuffleEngine.class.getName());

    private EngineShutdown() {
    }

    static void close(TransportContext transport, ServeService serve, FetchSide fetch) {
        fetch.stopCalls(); // calls queued run now, and fail: the engine is closed
        transport.stopTimer();
        serve.stopThreads();
        transport.awaitTimer(); // a fetch-buffer slab being registered there
        serve.awaitServers();
        serve.closeControlServer();
        fetch.stopSettingUp(); // fetches waiting for a connection fail now, not after the set-ups under way
        // Set-ups under way finish (or fail) within their connect timeout; none may outlive the PDs.
        long waitMillis = transport.waitForSetUpsMillis();
        if (!transport.quiesce(waitMillis)) {
            transport.stopPollers();
            fetch.closeControlClients(); // the fetch buffers stay: a set-up's queue pairs may still use them
            return;
        }
        try {
            fetch.failAll(new IOException("the engine is closing"));
            serve.retireConnections();
            transport.stopPollers();
            fetch.close();
            CompletableFuture<Void> ended = serve.endTenants(waitMillis); // no set-up runs now: QPs, then SRQ, regions, PD
            try {
                // A registration under way (ibv_reg_mr cannot be interrupted) holds its tenant's PD till it ends.
                ended.get(waitMillis, TimeUnit.MILLISECONDS);
            } catch (TimeoutException | ExecutionException | InterruptedException e) {
                if (e instanceof InterruptedException) {
                    Thread.currentThread().interrupt();
                }
                LOG.log(System.Logger.Level.WARNING, "rdma-shuffle: an application's resources are not all freed after "
                        + waitMillis + " ms (" + e + "); the completion queues and device context are left for the process's exit");
                return;
            }
            transport.closeDevice();
        } finally {
            transport.release(); // set-ups waiting now find the engine closed
        }
    }
}
