package org.rdmashuffle.benchmarks.cluster;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Hosts of our own: the network namespaces of one {@code bin/cluster-bed --hold} run, kept as long as
 * this object is open. The script owns the namespaces and tears them down when its standard input
 * closes, which {@link #close()} does, and which also happens if this JVM dies; so a killed test
 * leaves nothing behind but what the next run's leftover sweep removes.
 */
public final class ClusterBed implements AutoCloseable {
    /** {@code bin/cluster-bed}'s exit status when this machine cannot make hosts (not root, no ip, ...). */
    public static final int CANNOT = 77;
    private static final long SETUP_SECONDS = 120;

    /**
     * One host: its namespace, its address on the bed's subnet, and its disk: the mount point of a file
     * system of its own (bin/cluster-bed's header says why), or null where the hosts share this machine's.
     */
    public record Host(String namespace, String address, Path disk) {
        /** Where this host keeps {@code name}: on its own disk when it has one, else under {@code fallback}. */
        public Path dataDir(Path fallback, String name) throws IOException {
            return Files.createDirectories((disk != null ? disk : fallback).resolve(name));
        }

        /** {@code command}, to be run inside this host. */
        public List<String> command(List<String> command) {
            List<String> c = new ArrayList<>(List.of("ip", "netns", "exec", namespace));
            c.addAll(command);
            return c;
        }
    }

    private final Process script;
    private final List<Host> hosts;

    private ClusterBed(Process script, List<Host> hosts) {
        this.script = script;
        this.hosts = List.copyOf(hosts);
    }

    /**
     * Makes {@code count} hosts.
     *
     * @param rate tbf rate for each host's link (e.g. {@code 25gbit}), or null for none
     * @throws Unavailable when this machine cannot make hosts, with the script's reason
     */
    public static ClusterBed start(int count, String rate) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>(List.of(scriptPath().toString(), "--hosts", Integer.toString(count), "--hold"));
        if (rate != null) {
            command.addAll(List.of("--rate", rate));
        }
        Process p = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
        // The script prints its hosts, then "ready", then waits for our stdin to close.
        CompletableFuture<List<Host>> ready = CompletableFuture.supplyAsync(() -> {
            List<Host> hosts = new ArrayList<>();
            try {
                for (String line = out.readLine(); line != null; line = out.readLine()) {
                    String[] f = line.split(" ");
                    if (line.equals("ready")) {
                        return hosts;
                    } else if ((f.length == 3 || f.length == 4) && f[0].equals("host")) {
                        hosts.add(new Host(f[1], f[2], f.length == 4 ? Path.of(f[3]) : null));
                    }
                }
                return null;
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }, Thread::startVirtualThread);
        List<Host> hosts;
        try {
            hosts = ready.get(SETUP_SECONDS, TimeUnit.SECONDS);
        } catch (TimeoutException | ExecutionException e) {
            p.destroy();
            throw new IOException("bin/cluster-bed did not make " + count + " hosts in " + SETUP_SECONDS + " s", e);
        }
        if (hosts == null) { // its output ended: it is exiting
            if (!p.waitFor(30, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new IOException("bin/cluster-bed stopped talking but did not exit");
            }
            int status = p.exitValue();
            if (status == CANNOT) {
                throw new Unavailable("bin/cluster-bed cannot make hosts on this machine (its reason is printed above)");
            }
            throw new IOException("bin/cluster-bed exited with status " + status + " before the hosts were ready");
        }
        return new ClusterBed(p, hosts);
    }

    /** Whether this machine can make hosts: root and {@code ip}. Null if it can, else why not. */
    public static String unavailabilityCause() {
        if (!"root".equals(System.getProperty("user.name"))) {
            return "network namespaces need root, and this runs as " + System.getProperty("user.name");
        }
        for (String dir : System.getenv().getOrDefault("PATH", "/usr/sbin:/usr/bin:/sbin:/bin").split(":")) {
            if (Files.isExecutable(Path.of(dir, "ip"))) {
                return null;
            }
        }
        return "the 'ip' command is not installed (apt-get install iproute2)";
    }

    public List<Host> hosts() {
        return hosts;
    }

    /** The holding script (tests kill it to leave leftovers). */
    Process script() {
        return script;
    }

    /** The bed's namespaces' common prefix ({@code rsbed<PID>-}): what a leak check looks for. */
    public String namespacePrefix() {
        return hosts.get(0).namespace().substring(0, hosts.get(0).namespace().lastIndexOf('-') + 1);
    }

    /** The project's {@code bin/cluster-bed}, found from the working directory upward. */
    static Path scriptPath() {
        return Repository.root().resolve("bin/cluster-bed");
    }

    /** Closes the script's input: it kills every process left in the hosts and deletes them. Bounded. */
    @Override
    public void close() throws IOException, InterruptedException {
        script.getOutputStream().close();
        if (!script.waitFor(60, TimeUnit.SECONDS)) {
            script.destroy(); // its TERM trap tears down too
            if (!script.waitFor(30, TimeUnit.SECONDS)) {
                script.destroyForcibly();
                throw new IOException("bin/cluster-bed did not tear down in 90 s: run bin/cluster-bed --clean");
            }
        }
    }

    /** This machine cannot make hosts (see {@link #unavailabilityCause()}). */
    public static final class Unavailable extends IOException {
        Unavailable(String message) {
            super(message);
        }
    }
}
