package org.rdmashuffle.core;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.file.Path;

import org.rdmashuffle.core.config.EngineConfig;
import org.rdmashuffle.verbs.VerbsProvider;

/**
 * The other JVM of {@link TwoProcessFetchTest}: writes deterministic map outputs, serves them with an
 * engine, prints {@code READY <port>}, and exits when its stdin closes (or when it is killed).
 *
 * <p>Arguments: output directory, control port (0 for any), shuffle id, maps, partitions, largest partition.
 */
public final class ServingProcess {
    public static void main(String[] args) throws Exception {
        Path dir = java.nio.file.Files.createDirectories(Path.of(args[0]));
        int port = Integer.parseInt(args[1]);
        int shuffle = Integer.parseInt(args[2]);
        int maps = Integer.parseInt(args[3]);
        int partitions = Integer.parseInt(args[4]);
        int maxPartitionBytes = Integer.parseInt(args[5]);
        EngineConfig config = EngineTestSupport.smallConfig().set(EngineConfig.KEY_CONTROL_PORT, Integer.toString(port));
        VerbsProvider provider = EngineTestSupport.provider();
        try (RdmaShuffleEngine engine = RdmaShuffleEngine.start(config, EngineTestSupport.APP, EngineTestSupport.SECRET, provider)) {
            for (int m = 0; m < maps; m++) {
                EngineTestSupport.MapOutput o = EngineTestSupport.writeMapOutput(dir, shuffle, m, partitions, maxPartitionBytes,
                        31L * shuffle + m);
                engine.registerMapOutput(shuffle, m, o.file(), o.offsets());
            }
            System.out.println("READY " + engine.address().getPort());
            System.out.flush();
            if (args.length > 6) {
                Path until = Path.of(args[6]);
                while (!java.nio.file.Files.exists(until)) {
                    Thread.sleep(200);
                }
            } else {
                BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
                while (in.readLine() != null) {
                    // wait for the parent to close our stdin
                }
            }
        } finally {
            EngineTestSupport.closeProvider(provider);
        }
    }
}
