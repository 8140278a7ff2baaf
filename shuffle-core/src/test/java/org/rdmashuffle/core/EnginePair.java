package org.rdmashuffle.core;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import org.rdmashuffle.core.config.EngineConfig;
import org.rdmashuffle.verbs.VerbsProvider;

/** A serving engine with map outputs registered and a fetching engine, each on its own provider. Closes both. */
final class EnginePair implements AutoCloseable {
    final RdmaShuffleEngine server;
    final RdmaShuffleEngine client;
    final List<EngineTestSupport.MapOutput> outputs = new ArrayList<>();
    private final VerbsProvider serverProvider;
    private final VerbsProvider clientProvider;

    EnginePair(EngineConfig serverConfig, byte[] serverSecret, EngineConfig clientConfig, byte[] clientSecret) {
        serverProvider = EngineTestSupport.provider();
        clientProvider = EngineTestSupport.provider();
        RdmaShuffleEngine s = null;
        try {
            s = RdmaShuffleEngine.start(serverConfig, EngineTestSupport.APP, serverSecret, serverProvider);
            client = RdmaShuffleEngine.start(clientConfig, EngineTestSupport.APP, clientSecret, clientProvider);
        } catch (RuntimeException e) {
            if (s != null) {
                s.close();
            }
            EngineTestSupport.closeProvider(serverProvider);
            EngineTestSupport.closeProvider(clientProvider);
            throw e;
        }
        server = s;
    }

    static EnginePair open() {
        return new EnginePair(EngineTestSupport.smallConfig(), EngineTestSupport.SECRET, EngineTestSupport.smallConfig(),
                EngineTestSupport.SECRET);
    }

    /** Writes and registers {@code maps} outputs of shuffle {@code shuffle} on the server. */
    EnginePair withOutputs(Path dir, int shuffle, int maps, int partitions, int maxPartitionBytes) throws IOException {
        for (int m = 0; m < maps; m++) {
            EngineTestSupport.MapOutput o = EngineTestSupport.writeMapOutput(dir, shuffle, m, partitions, maxPartitionBytes,
                    31L * shuffle + m);
            server.registerMapOutput(shuffle, m, o.file(), o.offsets());
            outputs.add(o);
        }
        return this;
    }

    /** Closes both engines, then checks that no data connection outlived them, and closes the providers. */
    @Override
    public void close() {
        try {
            client.close();
        } finally {
            try {
                server.close();
                EngineTestSupport.assertNoConnectionsLeft(clientProvider);
                EngineTestSupport.assertNoConnectionsLeft(serverProvider);
            } finally {
                EngineTestSupport.closeProvider(clientProvider);
                EngineTestSupport.closeProvider(serverProvider);
            }
        }
    }
}
