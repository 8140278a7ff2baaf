package org.rdmashuffle.core.config;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Function;

import org.rdmashuffle.verbs.ProviderSettings;
import org.rdmashuffle.verbs.VerbsProvider;

/**
 * Every setting of the engine, with its default. Engine adapters read them from their own
 * configuration under a prefix (Spark: {@code spark.shuffle.rdma.}, Hadoop: {@code
 * rdma.shuffle.}) with {@link #read}, durations and sizes as their host engine reads them (a
 * {@link SettingSource}); the keys are the {@code KEY_*} constants ({@link #keys()}), and
 * docs/configuration.md lists each one. Every error names the full key, the value and what is accepted.
 *
 * <p>{@link #set} and {@link #fromProperties} read durations and sizes the engine's own way
 * ({@link SettingSource#of}).
 */
public final class EngineConfig {
    /** Which of {@code ibv_post_send} or the extended {@code ibv_wr_*} builder posts the data path's reads. */
    public enum PostPath {
        /** {@code ibv_wr_start/ibv_wr_rdma_read/ibv_wr_complete}: measured faster (docs/benchmarks.md). */
        BUILDER,
        /** A linked {@code ibv_send_wr} chain through {@code ibv_post_send}. */
        POST_SEND
    }

    /** Whether the engine registers its memory on demand (ODP) rather than pinned; see transport.MemoryRegistration. */
    public enum OnDemandPaging {
        /** On demand where the device has ODP for all the engine registers and pinning is limited below what it may need. */
        AUTO,
        /** On demand always: a device without ODP fails the engine's start. */
        TRUE,
        /** Pinned always. */
        FALSE
    }

    /**
     * Whether every RDMA_READ starts on a page boundary of the remote region and of the local buffer, the
     * block landing as far into its buffer as it starts into its page; see transport.MemoryRegistration.
     */
    public enum PageAlignedReads {
        /**
         * Where needed: this engine registers on demand on a device whose paging is right only from page
         * boundaries, or a serving peer says its regions are such (the connect reply).
         */
        AUTO,
        /** Always (tests; a device with the same fault the start check misses). */
        TRUE,
        /** Never: a device whose paging is right only from page boundaries is not used on demand. */
        FALSE
    }

    /** Whether a serving connection's reducer reads through memory windows bound for its own queue pair; see transport.WindowUse. */
    public enum MemoryWindows {
        /** Windows where the device has type 2 windows and nothing else rules them out; else plain regions, the reason logged. */
        AUTO,
        /** As auto, but a device or setting that rules windows out is logged as a warning. */
        TRUE,
        /** Plain regions: a described rkey is good on every queue pair of the application (the default). */
        FALSE
    }

    public static final String KEY_PROVIDER = "provider";
    public static final String KEY_DEVICE = "device";
    public static final String KEY_PORT = "port";
    public static final String KEY_GID_INDEX = "gidIndex";
    public static final String KEY_BIND_ADDRESS = "bindAddress";
    public static final String KEY_CONTROL_PORT = "controlPort";
    public static final String KEY_QPS_PER_PEER = "qpsPerPeer";
    public static final String KEY_CHAIN_LENGTH = "chainLength";
    public static final String KEY_MAX_BYTES_IN_FLIGHT = "maxBytesInFlight";
    public static final String KEY_MAX_BYTES_IN_FLIGHT_PER_PEER = "maxBytesInFlightPerPeer";
    public static final String KEY_MAX_CHAINS_IN_FLIGHT_PER_PEER = "maxChainsInFlightPerPeer";
    public static final String KEY_RECEIVE_BUFFERS = "srq.buffers";
    public static final String KEY_RECEIVE_BUFFER_SIZE = "srq.bufferSize";
    public static final String KEY_RECEIVE_LOW_WATER = "srq.lowWater";
    public static final String KEY_SEND_BUFFERS = "sendBuffers";
    public static final String KEY_REGISTERED_MEMORY_LIMIT = "registeredMemoryLimit";
    public static final String KEY_REGISTERED_MEMORY_LIMIT_PER_APPLICATION = "registeredMemoryLimitPerApplication";
    public static final String KEY_FETCH_BUFFER_MEMORY = "fetchBufferMemory";
    public static final String KEY_LAYOUT_CACHE_MEMORY = "layoutCacheMemory";
    public static final String KEY_POLLER_THREADS = "pollerThreads";
    public static final String KEY_SERVER_THREADS = "serverThreads";
    public static final String KEY_CONTROL_CLIENT_THREADS = "controlClientThreads";
    public static final String KEY_BUSY_POLL = "busyPoll";
    /** busyPoll's default on a device (a NIC, rxe): a completion within microseconds is taken without a wake-up. */
    public static final Duration DEVICE_BUSY_POLL = Duration.ofNanos(50_000);
    public static final String KEY_HAND_OFF_FETCHES = "handOffFetches";
    public static final String KEY_CONNECT_TIMEOUT = "connectTimeout";
    public static final String KEY_FETCH_TIMEOUT = "fetchTimeout";
    public static final String KEY_IDLE_TIMEOUT = "idleTimeout";
    public static final String KEY_POST_PATH = "postPath";
    /** Registering memory on demand (ODP) instead of pinning it: auto, true or false ({@link OnDemandPaging}). */
    public static final String KEY_ON_DEMAND_PAGING = "onDemandPaging";
    /** Reads that start on page boundaries: auto, true or false ({@link PageAlignedReads}). */
    public static final String KEY_PAGE_ALIGNED_READS = "pageAlignedReads";
    /** Reads through type 2 memory windows bound per serving connection: false, auto or true ({@link MemoryWindows}). */
    public static final String KEY_MEMORY_WINDOWS = "memoryWindows";
    public static final String KEY_MAX_MEMORY_WINDOWS_PER_APPLICATION = "maxMemoryWindowsPerApplication";
    public static final String KEY_MAX_SERVED_CONNECTIONS = "maxServedConnections";
    public static final String KEY_MAX_SERVED_CONNECTIONS_PER_APPLICATION = "maxServedConnectionsPerApplication";
    public static final String KEY_REGISTERED_MEMORY_LIMIT_PER_USER = "registeredMemoryLimitPerUser";
    public static final String KEY_MAX_REGISTERED_REGIONS = "maxRegisteredRegions";
    public static final String KEY_MAX_INDEX_MEMORY = "maxIndexMemory";
    public static final String KEY_MAX_SERVED_CONNECTIONS_PER_USER = "maxServedConnectionsPerUser";
    public static final String KEY_LOOKUP_TIMEOUT = "lookupTimeout";
    /** The software provider's settings, handed to whichever provider is chosen ({@link #providerSettings()}). */
    public static final String KEY_SOFTWARE_BIND_ADDRESS = "software.bindAddress";
    public static final String KEY_SOFTWARE_PORT = "software.port";
    public static final String KEY_SOFTWARE_SENDFILE = "software.sendfile";

    String provider = "auto";
    String device = null;
    int port = 1;
    int gidIndex = -1;
    String bindAddress = "127.0.0.1";
    int controlPort = 0;
    int qpsPerPeer = 1;
    int chainLength = 16;
    long maxBytesInFlight = 64L << 20;
    long maxBytesInFlightPerPeer = 32L << 20;
    int maxChainsInFlightPerPeer = 8;
    int receiveBuffers = 256;
    int receiveBufferSize = 32 << 10;
    int receiveLowWater = 32;
    int sendBuffers = 128;
    long registeredMemoryLimit = 64L << 30;
    /** Unset (-1): a quarter of registeredMemoryLimit. */
    long registeredMemoryLimitPerApplication = -1;
    long fetchBufferMemory = 256L << 20;
    long layoutCacheMemory = 16L << 20;
    int pollerThreads = 1;
    int serverThreads = 2;
    int controlClientThreads = 2;
    /** Unset (null, "auto"): {@link #DEVICE_BUSY_POLL} on a device, none on the software provider. */
    Duration busyPoll = null;
    /** Unset (null, "auto"): on the software provider only. */
    Boolean handOffFetches = null;
    Duration connectTimeout = Duration.ofSeconds(10);
    Duration fetchTimeout = Duration.ofSeconds(120);
    Duration idleTimeout = Duration.ofSeconds(120);
    PostPath postPath = PostPath.BUILDER;
    OnDemandPaging onDemandPaging = OnDemandPaging.AUTO;
    PageAlignedReads pageAlignedReads = PageAlignedReads.AUTO;
    MemoryWindows memoryWindows = MemoryWindows.FALSE;
    int maxMemoryWindowsPerApplication = 16384;
    int maxServedConnections = 1024;
    int maxServedConnectionsPerApplication = 512;
    /** Unset (-1): half of registeredMemoryLimit. */
    long registeredMemoryLimitPerUser = -1;
    int maxRegisteredRegions = 8192;
    long maxIndexMemory = 128L << 20;
    /** Unset (-1): three quarters of maxServedConnections, and at least maxServedConnectionsPerApplication. */
    int maxServedConnectionsPerUser = -1;
    Duration lookupTimeout = Duration.ofSeconds(10);
    /** Unset (null): {@link #bindAddress}, or loopback if that is the wildcard address. */
    String softwareBindAddress = null;
    int softwarePort = 0;
    boolean softwareSendfile = false;

    public static EngineConfig defaults() {
        return new EngineConfig();
    }

    /**
     * Reads every {@code prefix + KEY_*} that {@code lookup} has, durations and sizes the engine's own way
     * ({@link SettingSource#of}); the rest keep their defaults. Fails as {@link #read} does.
     */
    public static EngineConfig fromProperties(String prefix, Function<String, String> lookup) {
        return read(prefix, SettingSource.of(lookup));
    }

    /**
     * Reads every {@code prefix + KEY_*} that {@code source} has, durations and sizes as the source's host
     * reads them; the rest keep their defaults. Every value that does not read or is out of range fails it,
     * all in one {@link IllegalArgumentException} naming each full key, its value and what is accepted.
     */
    public static EngineConfig read(String prefix, SettingSource source) {
        EngineConfig c = new EngineConfig();
        List<String> problems = c.readAll(prefix, source);
        if (!problems.isEmpty()) {
            throw new IllegalArgumentException(String.join(PROBLEM_SEPARATOR, problems));
        }
        return c;
    }

    /**
     * What is wrong with the engine's settings in {@code source} under {@code prefix}: one line for each
     * value that does not read or is out of range, naming the full key, the value and what is accepted;
     * empty if nothing is. For a check before any engine starts (an adapter's driver or job client).
     */
    public static List<String> problems(String prefix, SettingSource source) {
        return new EngineConfig().readAll(prefix, source);
    }

    /** Separates the problems of {@link #read} and {@link #validate} in one message. */
    public static final String PROBLEM_SEPARATOR = " | ";

    /**
     * The names {@link #KEY_PROVIDER} takes: native-verbs' {@code Verbs.select} names (auto, then each
     * provider's), written out here because the engine names no provider's class (LayeringTest);
     * SettingErrorsTest checks them against native-verbs' own list.
     */
    public static final List<String> PROVIDERS = List.of("auto", "ibverbs", "software");

    /** Every key the engine reads (without prefix); docs/configuration.md has a row for each (SettingErrorsTest). */
    public static List<String> keys() {
        return List.of(KEY_PROVIDER, KEY_DEVICE, KEY_PORT, KEY_GID_INDEX, KEY_BIND_ADDRESS, KEY_CONTROL_PORT,
                KEY_QPS_PER_PEER, KEY_CHAIN_LENGTH, KEY_MAX_BYTES_IN_FLIGHT, KEY_MAX_BYTES_IN_FLIGHT_PER_PEER,
                KEY_MAX_CHAINS_IN_FLIGHT_PER_PEER, KEY_RECEIVE_BUFFERS, KEY_RECEIVE_BUFFER_SIZE, KEY_RECEIVE_LOW_WATER,
                KEY_SEND_BUFFERS, KEY_REGISTERED_MEMORY_LIMIT, KEY_REGISTERED_MEMORY_LIMIT_PER_APPLICATION, KEY_FETCH_BUFFER_MEMORY, KEY_LAYOUT_CACHE_MEMORY, KEY_POLLER_THREADS,
                KEY_SERVER_THREADS, KEY_CONTROL_CLIENT_THREADS,
                KEY_BUSY_POLL, KEY_HAND_OFF_FETCHES, KEY_CONNECT_TIMEOUT, KEY_FETCH_TIMEOUT, KEY_IDLE_TIMEOUT, KEY_POST_PATH, KEY_ON_DEMAND_PAGING, KEY_PAGE_ALIGNED_READS, KEY_MEMORY_WINDOWS, KEY_MAX_MEMORY_WINDOWS_PER_APPLICATION,
                KEY_MAX_SERVED_CONNECTIONS,
                KEY_MAX_SERVED_CONNECTIONS_PER_APPLICATION, KEY_REGISTERED_MEMORY_LIMIT_PER_USER, KEY_MAX_REGISTERED_REGIONS,
                KEY_MAX_INDEX_MEMORY, KEY_MAX_SERVED_CONNECTIONS_PER_USER, KEY_LOOKUP_TIMEOUT, KEY_SOFTWARE_BIND_ADDRESS,
                KEY_SOFTWARE_PORT, KEY_SOFTWARE_SENDFILE);
    }

    /** How a key's text is read: what the value must be. */
    private enum Kind {
        TEXT("text"), WHOLE("a whole number"), SIZE("a size"), DURATION("a duration"), CHOICE("one of the choices");

        final String noun;

        Kind(String noun) {
            this.noun = noun;
        }
    }

    private static Kind kind(String key) {
        return switch (key) {
            case KEY_DEVICE, KEY_BIND_ADDRESS, KEY_SOFTWARE_BIND_ADDRESS -> Kind.TEXT;
            case KEY_PROVIDER, KEY_HAND_OFF_FETCHES, KEY_POST_PATH, KEY_ON_DEMAND_PAGING, KEY_PAGE_ALIGNED_READS,
                    KEY_MEMORY_WINDOWS, KEY_SOFTWARE_SENDFILE -> Kind.CHOICE;
            case KEY_MAX_BYTES_IN_FLIGHT, KEY_MAX_BYTES_IN_FLIGHT_PER_PEER, KEY_RECEIVE_BUFFER_SIZE, KEY_REGISTERED_MEMORY_LIMIT,
                    KEY_REGISTERED_MEMORY_LIMIT_PER_APPLICATION, KEY_FETCH_BUFFER_MEMORY, KEY_LAYOUT_CACHE_MEMORY,
                    KEY_REGISTERED_MEMORY_LIMIT_PER_USER, KEY_MAX_INDEX_MEMORY -> Kind.SIZE;
            case KEY_BUSY_POLL, KEY_CONNECT_TIMEOUT, KEY_FETCH_TIMEOUT, KEY_IDLE_TIMEOUT, KEY_LOOKUP_TIMEOUT -> Kind.DURATION;
            case KEY_PORT, KEY_GID_INDEX, KEY_CONTROL_PORT, KEY_QPS_PER_PEER, KEY_CHAIN_LENGTH, KEY_MAX_CHAINS_IN_FLIGHT_PER_PEER,
                    KEY_RECEIVE_BUFFERS, KEY_RECEIVE_LOW_WATER, KEY_SEND_BUFFERS, KEY_POLLER_THREADS, KEY_SERVER_THREADS,
                    KEY_CONTROL_CLIENT_THREADS, KEY_MAX_MEMORY_WINDOWS_PER_APPLICATION, KEY_MAX_SERVED_CONNECTIONS,
                    KEY_MAX_SERVED_CONNECTIONS_PER_APPLICATION, KEY_MAX_REGISTERED_REGIONS, KEY_MAX_SERVED_CONNECTIONS_PER_USER,
                    KEY_SOFTWARE_PORT -> Kind.WHOLE;
            default -> throw new IllegalArgumentException("unknown key " + key);
        };
    }

    /** What {@code key} accepts, the choices or the range ({@code p}: the adapter's prefix, for the keys it names). */
    private static String accepted(String key, String p) {
        return switch (key) {
            case KEY_PROVIDER -> String.join(", ", PROVIDERS.subList(0, PROVIDERS.size() - 1)) + " or " + PROVIDERS.getLast();
            case KEY_HAND_OFF_FETCHES, KEY_ON_DEMAND_PAGING, KEY_PAGE_ALIGNED_READS -> "auto, true or false";
            case KEY_MEMORY_WINDOWS -> "false, auto or true";
            case KEY_POST_PATH -> "builder or post_send";
            case KEY_SOFTWARE_SENDFILE -> "true or false";
            case KEY_PORT -> "1..255";
            case KEY_GID_INDEX -> "auto, or a GID table index (0 and up)";
            case KEY_CONTROL_PORT, KEY_SOFTWARE_PORT -> "0..65535 (0: any free port)";
            case KEY_QPS_PER_PEER, KEY_POLLER_THREADS, KEY_SERVER_THREADS, KEY_CONTROL_CLIENT_THREADS -> "1..64";
            case KEY_CHAIN_LENGTH, KEY_MAX_CHAINS_IN_FLIGHT_PER_PEER -> "1..1024";
            case KEY_RECEIVE_BUFFERS, KEY_SEND_BUFFERS -> "at least 2";
            case KEY_RECEIVE_LOW_WATER -> "0 to one less than " + p + KEY_RECEIVE_BUFFERS;
            case KEY_RECEIVE_BUFFER_SIZE -> "at least 1k, below 2g";
            case KEY_MAX_BYTES_IN_FLIGHT, KEY_MAX_BYTES_IN_FLIGHT_PER_PEER, KEY_REGISTERED_MEMORY_LIMIT -> "positive";
            case KEY_REGISTERED_MEMORY_LIMIT_PER_APPLICATION, KEY_REGISTERED_MEMORY_LIMIT_PER_USER ->
                    "positive, at most " + p + KEY_REGISTERED_MEMORY_LIMIT;
            case KEY_FETCH_BUFFER_MEMORY, KEY_MAX_INDEX_MEMORY -> "at least 1m";
            case KEY_LAYOUT_CACHE_MEMORY -> "at least 64k";
            case KEY_BUSY_POLL -> "auto, or 0 or more";
            case KEY_CONNECT_TIMEOUT, KEY_FETCH_TIMEOUT, KEY_IDLE_TIMEOUT, KEY_LOOKUP_TIMEOUT -> "at least 1ms";
            case KEY_MAX_MEMORY_WINDOWS_PER_APPLICATION, KEY_MAX_SERVED_CONNECTIONS, KEY_MAX_SERVED_CONNECTIONS_PER_APPLICATION,
                    KEY_MAX_SERVED_CONNECTIONS_PER_USER -> "positive";
            // Well below vm.max_map_count (65530 by default), which the JVM's own stacks, heap and malloc share.
            case KEY_MAX_REGISTERED_REGIONS -> "4..32768";
            default -> "any text";
        };
    }

    /** What a value of {@code key} is expected to be: its range or choices, and for a size or duration the source's forms. */
    private static String expected(String key, String p, SettingSource source) {
        return switch (kind(key)) {
            case SIZE -> accepted(key, p) + ", " + source.sizes();
            case DURATION -> accepted(key, p) + ", " + source.durations();
            default -> accepted(key, p);
        };
    }

    /** The adapter's prefix of the keys this was read under ("" for one made with {@link #set}): errors name full keys. */
    private String prefix = "";
    /** Each key's text as it was written (before trimming), for errors. */
    private final Map<String, String> written = new HashMap<>();
    /** Keys whose text did not read: their range is not checked (the problem is already named). */
    private final java.util.Set<String> unreadable = new java.util.HashSet<>();

    private List<String> readAll(String adapterPrefix, SettingSource source) {
        prefix = adapterPrefix;
        List<String> problems = new ArrayList<>();
        for (String key : keys()) {
            String problem = readKey(key, source);
            if (problem != null) {
                problems.add(problem);
            }
        }
        problems.addAll(rangeProblems());
        return problems;
    }

    /** Sets one key (without prefix) from its text form, read the engine's own way ({@link SettingSource#of}); returns this. */
    public EngineConfig set(String key, String v) {
        kind(key); // an unknown key fails here, naming it
        String problem = readKey(key, SettingSource.of(k -> k.equals(prefix + key) ? v : null));
        if (problem != null) {
            throw new IllegalArgumentException(problem);
        }
        return this;
    }

    /** Reads {@code key} from {@code source} if set there; what is wrong with its text, or null. */
    private String readKey(String key, SettingSource source) {
        String full = prefix + key;
        String text = source.get(full);
        if (text == null) {
            return null;
        }
        written.put(key, text);
        unreadable.remove(key);
        String v = text.trim();
        Kind kind = kind(key);
        try {
            switch (kind) {
                case TEXT -> setText(key, v);
                case CHOICE -> setChoice(key, v);
                case WHOLE -> setWhole(key, v);
                case SIZE -> setSize(key, source.size(full));
                case DURATION -> setDuration(key, v.equalsIgnoreCase("auto") && key.equals(KEY_BUSY_POLL) ? null
                        : source.duration(full));
            }
            return null;
        } catch (ArithmeticException e) {
            unreadable.add(key);
            return full + "=" + text + ": out of range; expected " + expected(key, prefix, source);
        } catch (RuntimeException e) {
            unreadable.add(key);
            return full + "=" + text + ": not " + kind.noun + "; expected " + expected(key, prefix, source);
        }
    }

    private void setText(String key, String v) {
        switch (key) {
            case KEY_DEVICE -> device = v.isEmpty() ? null : v;
            case KEY_BIND_ADDRESS -> bindAddress = v;
            case KEY_SOFTWARE_BIND_ADDRESS -> softwareBindAddress = v.isEmpty() ? null : v;
            default -> throw new IllegalStateException(key);
        }
    }

    private void setChoice(String key, String v) {
        String c = v.toLowerCase(Locale.ROOT);
        switch (key) {
            case KEY_PROVIDER -> provider = oneOf(c, PROVIDERS.toArray(String[]::new));
            case KEY_HAND_OFF_FETCHES -> handOffFetches = oneOf(c, "auto", "true", "false").equals("auto") ? null : Boolean.valueOf(c);
            case KEY_SOFTWARE_SENDFILE -> softwareSendfile = Boolean.parseBoolean(oneOf(c, "true", "false"));
            case KEY_POST_PATH -> postPath = PostPath.valueOf(oneOf(c.replace('-', '_'), "builder", "post_send").toUpperCase(Locale.ROOT));
            case KEY_ON_DEMAND_PAGING -> onDemandPaging = OnDemandPaging.valueOf(oneOf(c, "auto", "true", "false").toUpperCase(Locale.ROOT));
            case KEY_PAGE_ALIGNED_READS -> pageAlignedReads = PageAlignedReads.valueOf(oneOf(c, "auto", "true", "false").toUpperCase(Locale.ROOT));
            case KEY_MEMORY_WINDOWS -> memoryWindows = MemoryWindows.valueOf(oneOf(c, "auto", "true", "false").toUpperCase(Locale.ROOT));
            default -> throw new IllegalStateException(key);
        }
    }

    /** {@code c} if it is one of {@code choices}; else an exception (the caller names the key and the choices). */
    private static String oneOf(String c, String... choices) {
        for (String choice : choices) {
            if (choice.equals(c)) {
                return c;
            }
        }
        throw new IllegalArgumentException(c);
    }

    private void setWhole(String key, String v) {
        if (key.equals(KEY_GID_INDEX) && v.equalsIgnoreCase("auto")) {
            gidIndex = -1;
            return;
        }
        int n = Integer.parseInt(v);
        switch (key) {
            case KEY_PORT -> port = n;
            case KEY_GID_INDEX -> gidIndex = n;
            case KEY_CONTROL_PORT -> controlPort = n;
            case KEY_QPS_PER_PEER -> qpsPerPeer = n;
            case KEY_CHAIN_LENGTH -> chainLength = n;
            case KEY_MAX_CHAINS_IN_FLIGHT_PER_PEER -> maxChainsInFlightPerPeer = n;
            case KEY_RECEIVE_BUFFERS -> receiveBuffers = n;
            case KEY_RECEIVE_LOW_WATER -> receiveLowWater = n;
            case KEY_SEND_BUFFERS -> sendBuffers = n;
            case KEY_POLLER_THREADS -> pollerThreads = n;
            case KEY_SERVER_THREADS -> serverThreads = n;
            case KEY_CONTROL_CLIENT_THREADS -> controlClientThreads = n;
            case KEY_MAX_MEMORY_WINDOWS_PER_APPLICATION -> maxMemoryWindowsPerApplication = n;
            case KEY_MAX_SERVED_CONNECTIONS -> maxServedConnections = n;
            case KEY_MAX_SERVED_CONNECTIONS_PER_APPLICATION -> maxServedConnectionsPerApplication = n;
            case KEY_MAX_REGISTERED_REGIONS -> maxRegisteredRegions = n;
            case KEY_MAX_SERVED_CONNECTIONS_PER_USER -> maxServedConnectionsPerUser = n;
            case KEY_SOFTWARE_PORT -> softwarePort = n;
            default -> throw new IllegalStateException(key);
        }
    }

    private void setSize(String key, long bytes) {
        switch (key) {
            case KEY_MAX_BYTES_IN_FLIGHT -> maxBytesInFlight = bytes;
            case KEY_MAX_BYTES_IN_FLIGHT_PER_PEER -> maxBytesInFlightPerPeer = bytes;
            case KEY_RECEIVE_BUFFER_SIZE -> receiveBufferSize = Math.toIntExact(bytes);
            case KEY_REGISTERED_MEMORY_LIMIT -> registeredMemoryLimit = bytes;
            case KEY_REGISTERED_MEMORY_LIMIT_PER_APPLICATION -> registeredMemoryLimitPerApplication = bytes;
            case KEY_FETCH_BUFFER_MEMORY -> fetchBufferMemory = bytes;
            case KEY_LAYOUT_CACHE_MEMORY -> layoutCacheMemory = bytes;
            case KEY_REGISTERED_MEMORY_LIMIT_PER_USER -> registeredMemoryLimitPerUser = bytes;
            case KEY_MAX_INDEX_MEMORY -> maxIndexMemory = bytes;
            default -> throw new IllegalStateException(key);
        }
    }

    private void setDuration(String key, Duration d) {
        switch (key) {
            case KEY_BUSY_POLL -> busyPoll = d;
            case KEY_CONNECT_TIMEOUT -> connectTimeout = d;
            case KEY_FETCH_TIMEOUT -> fetchTimeout = d;
            case KEY_IDLE_TIMEOUT -> idleTimeout = d;
            case KEY_LOOKUP_TIMEOUT -> lookupTimeout = d;
            default -> throw new IllegalStateException(key);
        }
    }

    /**
     * Refuses settings the engine cannot run with: one {@link IllegalArgumentException} naming each full
     * key out of range, its value and what is accepted.
     */
    public EngineConfig validate() {
        List<String> problems = rangeProblems();
        if (!problems.isEmpty()) {
            throw new IllegalArgumentException(String.join(PROBLEM_SEPARATOR, problems));
        }
        return this;
    }

    private List<String> rangeProblems() {
        List<String> out = new ArrayList<>();
        String p = prefix;
        require(out, port >= 1 && port <= 255, KEY_PORT, port);
        require(out, gidIndex >= -1, KEY_GID_INDEX, gidIndex);
        require(out, controlPort >= 0 && controlPort <= 65535, KEY_CONTROL_PORT, controlPort);
        require(out, qpsPerPeer >= 1 && qpsPerPeer <= 64, KEY_QPS_PER_PEER, qpsPerPeer);
        require(out, chainLength >= 1 && chainLength <= 1024, KEY_CHAIN_LENGTH, chainLength);
        require(out, maxBytesInFlight > 0, KEY_MAX_BYTES_IN_FLIGHT, maxBytesInFlight);
        require(out, maxBytesInFlightPerPeer > 0, KEY_MAX_BYTES_IN_FLIGHT_PER_PEER, maxBytesInFlightPerPeer);
        require(out, maxChainsInFlightPerPeer >= 1 && maxChainsInFlightPerPeer <= 1024, KEY_MAX_CHAINS_IN_FLIGHT_PER_PEER,
                maxChainsInFlightPerPeer);
        require(out, receiveBuffers >= 2, KEY_RECEIVE_BUFFERS, receiveBuffers);
        require(out, receiveBufferSize >= 1024, KEY_RECEIVE_BUFFER_SIZE, receiveBufferSize);
        if (!unreadable.contains(KEY_RECEIVE_BUFFERS)) {
            require(out, receiveLowWater >= 0 && receiveLowWater < receiveBuffers, KEY_RECEIVE_LOW_WATER,
                    "0.." + (receiveBuffers - 1) + " (below " + p + KEY_RECEIVE_BUFFERS + ")", receiveLowWater);
        }
        require(out, sendBuffers >= 2, KEY_SEND_BUFFERS, sendBuffers);
        require(out, registeredMemoryLimit > 0, KEY_REGISTERED_MEMORY_LIMIT, registeredMemoryLimit);
        if (!unreadable.contains(KEY_REGISTERED_MEMORY_LIMIT)) {
            require(out, registeredMemoryLimitPerApplication == -1
                            || (registeredMemoryLimitPerApplication > 0 && registeredMemoryLimitPerApplication <= registeredMemoryLimit),
                    KEY_REGISTERED_MEMORY_LIMIT_PER_APPLICATION, "1.." + registeredMemoryLimit + " (at most " + p
                            + KEY_REGISTERED_MEMORY_LIMIT + ")", registeredMemoryLimitPerApplication);
            require(out, registeredMemoryLimitPerUser == -1
                            || (registeredMemoryLimitPerUser > 0 && registeredMemoryLimitPerUser <= registeredMemoryLimit),
                    KEY_REGISTERED_MEMORY_LIMIT_PER_USER, "1.." + registeredMemoryLimit + " (at most " + p
                            + KEY_REGISTERED_MEMORY_LIMIT + ")", registeredMemoryLimitPerUser);
        }
        require(out, fetchBufferMemory >= (1 << 20), KEY_FETCH_BUFFER_MEMORY, fetchBufferMemory);
        require(out, layoutCacheMemory >= (64 << 10), KEY_LAYOUT_CACHE_MEMORY, layoutCacheMemory);
        require(out, pollerThreads >= 1 && pollerThreads <= 64, KEY_POLLER_THREADS, pollerThreads);
        require(out, serverThreads >= 1 && serverThreads <= 64, KEY_SERVER_THREADS, serverThreads);
        require(out, controlClientThreads >= 1 && controlClientThreads <= 64, KEY_CONTROL_CLIENT_THREADS, controlClientThreads);
        require(out, busyPoll == null || !busyPoll.isNegative(), KEY_BUSY_POLL, busyPoll);
        require(out, connectTimeout.toMillis() > 0, KEY_CONNECT_TIMEOUT, connectTimeout);
        require(out, fetchTimeout.toMillis() > 0, KEY_FETCH_TIMEOUT, fetchTimeout);
        require(out, idleTimeout.toMillis() > 0, KEY_IDLE_TIMEOUT, idleTimeout);
        require(out, maxServedConnections >= 1, KEY_MAX_SERVED_CONNECTIONS, maxServedConnections);
        require(out, maxServedConnectionsPerApplication >= 1, KEY_MAX_SERVED_CONNECTIONS_PER_APPLICATION,
                maxServedConnectionsPerApplication);
        require(out, maxRegisteredRegions >= 4 && maxRegisteredRegions <= 32768, KEY_MAX_REGISTERED_REGIONS, maxRegisteredRegions);
        require(out, maxIndexMemory >= (1 << 20), KEY_MAX_INDEX_MEMORY, maxIndexMemory);
        require(out, maxMemoryWindowsPerApplication >= 1, KEY_MAX_MEMORY_WINDOWS_PER_APPLICATION, maxMemoryWindowsPerApplication);
        require(out, maxServedConnectionsPerUser == -1 || maxServedConnectionsPerUser >= 1, KEY_MAX_SERVED_CONNECTIONS_PER_USER,
                maxServedConnectionsPerUser);
        require(out, lookupTimeout.toMillis() > 0, KEY_LOOKUP_TIMEOUT, lookupTimeout);
        require(out, softwarePort >= 0 && softwarePort <= 65535, KEY_SOFTWARE_PORT, softwarePort);
        return out;
    }

    private void require(List<String> out, boolean ok, String key, Object value) {
        require(out, ok, key, accepted(key, prefix), value);
    }

    /** Adds the problem of {@code key} out of {@code range} unless {@code ok} (or its text did not read: named already). */
    private void require(List<String> out, boolean ok, String key, String range, Object value) {
        if (!ok && !unreadable.contains(key)) {
            String text = written.get(key);
            out.add(prefix + key + "=" + (text != null ? text : value + " (its default)") + ": out of range; expected " + range);
        }
    }

    /** Every setting by key, as text: for logs and the doctor. */
    public Map<String, String> describe() {
        Map<String, String> m = new LinkedHashMap<>();
        m.put(KEY_PROVIDER, provider);
        m.put(KEY_DEVICE, device == null ? "(first)" : device);
        m.put(KEY_PORT, Integer.toString(port));
        m.put(KEY_GID_INDEX, gidIndex < 0 ? "auto" : Integer.toString(gidIndex));
        m.put(KEY_BIND_ADDRESS, bindAddress);
        m.put(KEY_CONTROL_PORT, Integer.toString(controlPort));
        m.put(KEY_QPS_PER_PEER, Integer.toString(qpsPerPeer));
        m.put(KEY_CHAIN_LENGTH, Integer.toString(chainLength));
        m.put(KEY_MAX_BYTES_IN_FLIGHT, Long.toString(maxBytesInFlight));
        m.put(KEY_MAX_BYTES_IN_FLIGHT_PER_PEER, Long.toString(maxBytesInFlightPerPeer));
        m.put(KEY_MAX_CHAINS_IN_FLIGHT_PER_PEER, Integer.toString(maxChainsInFlightPerPeer));
        m.put(KEY_RECEIVE_BUFFERS, Integer.toString(receiveBuffers));
        m.put(KEY_RECEIVE_BUFFER_SIZE, Integer.toString(receiveBufferSize));
        m.put(KEY_RECEIVE_LOW_WATER, Integer.toString(receiveLowWater));
        m.put(KEY_SEND_BUFFERS, Integer.toString(sendBuffers));
        m.put(KEY_REGISTERED_MEMORY_LIMIT, Long.toString(registeredMemoryLimit));
        m.put(KEY_REGISTERED_MEMORY_LIMIT_PER_APPLICATION, Long.toString(registeredMemoryLimitPerApplication()));
        m.put(KEY_FETCH_BUFFER_MEMORY, Long.toString(fetchBufferMemory));
        m.put(KEY_LAYOUT_CACHE_MEMORY, Long.toString(layoutCacheMemory));
        m.put(KEY_POLLER_THREADS, Integer.toString(pollerThreads));
        m.put(KEY_SERVER_THREADS, Integer.toString(serverThreads));
        m.put(KEY_CONTROL_CLIENT_THREADS, Integer.toString(controlClientThreads));
        m.put(KEY_BUSY_POLL, busyPoll == null ? "auto" : busyPoll.toNanos() / 1000 + "us");
        m.put(KEY_HAND_OFF_FETCHES, handOffFetches == null ? "auto" : handOffFetches.toString());
        m.put(KEY_CONNECT_TIMEOUT, connectTimeout.toMillis() + "ms");
        m.put(KEY_FETCH_TIMEOUT, fetchTimeout.toMillis() + "ms");
        m.put(KEY_IDLE_TIMEOUT, idleTimeout.toMillis() + "ms");
        m.put(KEY_POST_PATH, postPath.name().toLowerCase(Locale.ROOT));
        m.put(KEY_ON_DEMAND_PAGING, onDemandPaging.name().toLowerCase(Locale.ROOT));
        m.put(KEY_PAGE_ALIGNED_READS, pageAlignedReads.name().toLowerCase(Locale.ROOT));
        m.put(KEY_MEMORY_WINDOWS, memoryWindows.name().toLowerCase(Locale.ROOT));
        m.put(KEY_MAX_MEMORY_WINDOWS_PER_APPLICATION, Integer.toString(maxMemoryWindowsPerApplication));
        m.put(KEY_MAX_SERVED_CONNECTIONS, Integer.toString(maxServedConnections));
        m.put(KEY_MAX_SERVED_CONNECTIONS_PER_APPLICATION, Integer.toString(maxServedConnectionsPerApplication));
        m.put(KEY_REGISTERED_MEMORY_LIMIT_PER_USER, Long.toString(registeredMemoryLimitPerUser()));
        m.put(KEY_MAX_REGISTERED_REGIONS, Integer.toString(maxRegisteredRegions));
        m.put(KEY_MAX_INDEX_MEMORY, Long.toString(maxIndexMemory));
        m.put(KEY_MAX_SERVED_CONNECTIONS_PER_USER, Integer.toString(maxServedConnectionsPerUser()));
        m.put(KEY_LOOKUP_TIMEOUT, lookupTimeout.toMillis() + "ms");
        m.putAll(providerSettings().values());
        return m;
    }

    public String provider() { return provider; }
    public String device() { return device; }
    public int port() { return port; }
    public int gidIndex() { return gidIndex; }
    public String bindAddress() { return bindAddress; }
    public int controlPort() { return controlPort; }
    public int qpsPerPeer() { return qpsPerPeer; }
    public int chainLength() { return chainLength; }
    public long maxBytesInFlight() { return maxBytesInFlight; }
    public long maxBytesInFlightPerPeer() { return maxBytesInFlightPerPeer; }
    public int maxChainsInFlightPerPeer() { return maxChainsInFlightPerPeer; }

    /** The most bytes one chain of reads to a peer carries: its share of the peer's bytes in flight, at least 256 KiB. */
    public long maxChainBytes() {
        return Math.max(256 << 10, maxBytesInFlightPerPeer / maxChainsInFlightPerPeer);
    }
    public int receiveBuffers() { return receiveBuffers; }
    public int receiveBufferSize() { return receiveBufferSize; }
    public int receiveLowWater() { return receiveLowWater; }
    public int sendBuffers() { return sendBuffers; }
    public long registeredMemoryLimit() { return registeredMemoryLimit; }

    /**
     * Most map-output bytes one application may have registered on a node that serves many: bounds
     * what one tenant can pin of the node's {@link #registeredMemoryLimit()}. Unset: a quarter of it.
     */
    public long registeredMemoryLimitPerApplication() {
        return registeredMemoryLimitPerApplication > 0 ? registeredMemoryLimitPerApplication
                : Math.max(1, registeredMemoryLimit / 4);
    }
    public long fetchBufferMemory() { return fetchBufferMemory; }

    /**
     * What the map-output layouts a reducer keeps may take, across every peer: 8 bytes a partition
     * and about 128 an output. A block of an output whose layout is kept is read with no request.
     */
    public long layoutCacheMemory() { return layoutCacheMemory; }
    public int pollerThreads() { return pollerThreads; }
    /** Threads answering fetch requests that need slow work (finding an output on disk, registering its file). */
    public int serverThreads() { return serverThreads; }

    public int controlClientThreads() { return controlClientThreads; }
    /**
     * How long an idle poller polls before it sleeps: as set, else {@link #DEVICE_BUSY_POLL} on a device
     * and none on a provider that {@linkplain VerbsProvider#completesOnItsOwnThreads completes on its own
     * threads} (the software provider): polling there takes the core from the thread that makes the
     * completion (measured: docs/benchmarks.md, issue 18).
     */
    public Duration busyPollOn(VerbsProvider provider) {
        return busyPoll != null ? busyPoll : provider.completesOnItsOwnThreads() ? Duration.ZERO : DEVICE_BUSY_POLL;
    }

    /**
     * Whether a fetch call runs on a thread of the engine's (the caller returns at once) rather than
     * the caller's: as set, else on a provider that completes on its own threads, where a call's posts
     * are socket writes that wake the provider's threads while the caller (a reduce task, its fetch
     * wait counted) is still in the call; on a device a post is a doorbell, cheaper than the hand-off.
     */
    public boolean handOffFetchesOn(VerbsProvider provider) {
        return handOffFetches != null ? handOffFetches : provider.completesOnItsOwnThreads();
    }

    /**
     * What the provider is configured with when the engine chooses it: the software provider's data
     * listener ({@code software.bindAddress}, by default the engine's {@link #bindAddress()} or loopback
     * for a wildcard; {@code software.port}; {@code software.sendfile}).
     */
    public ProviderSettings providerSettings() {
        String bind = softwareBindAddress != null ? softwareBindAddress
                : bindAddress.equals("0.0.0.0") || bindAddress.equals("::") ? "127.0.0.1" : bindAddress;
        return new ProviderSettings(Map.of(KEY_SOFTWARE_BIND_ADDRESS, bind, KEY_SOFTWARE_PORT, Integer.toString(softwarePort),
                KEY_SOFTWARE_SENDFILE, Boolean.toString(softwareSendfile)));
    }

    public Duration connectTimeout() { return connectTimeout; }
    public Duration fetchTimeout() { return fetchTimeout; }

    public Duration idleTimeout() { return idleTimeout; }
    public PostPath postPath() { return postPath; }

    public OnDemandPaging onDemandPaging() { return onDemandPaging; }
    public PageAlignedReads pageAlignedReads() { return pageAlignedReads; }
    public MemoryWindows memoryWindows() { return memoryWindows; }
    public int maxServedConnections() { return maxServedConnections; }
    public int maxServedConnectionsPerApplication() { return maxServedConnectionsPerApplication; }

    /**
     * Most map-output bytes the applications of one user may have registered together on a node that
     * serves many: one user running several applications still gets one user's share. Unset: half of
     * {@link #registeredMemoryLimit()}.
     */
    public long registeredMemoryLimitPerUser() {
        return registeredMemoryLimitPerUser > 0 ? registeredMemoryLimitPerUser : Math.max(1, registeredMemoryLimit / 2);
    }

    /** Regions (each a mapping, and with sendfile a descriptor) a serving node keeps registered at once; a quarter per application, half per user. */
    public int maxRegisteredRegions() { return maxRegisteredRegions; }

    /** With {@link #memoryWindows()} in use: windows one application's reducers may hold on a service at once. */
    public int maxMemoryWindowsPerApplication() { return maxMemoryWindowsPerApplication; }

    /** Heap a serving node spends on the indexes of map outputs found on disk; a quarter per application, half per user. */
    public long maxIndexMemory() { return maxIndexMemory; }

    /** Connections of one user's applications together (data connections, and control connections alike). */
    public int maxServedConnectionsPerUser() {
        return maxServedConnectionsPerUser > 0 ? maxServedConnectionsPerUser
                : Math.max(maxServedConnectionsPerApplication, maxServedConnections * 3 / 4);
    }

    /** How long a server thread waits for a map output's lookup on disk, or another request's registration of it. */
    public Duration lookupTimeout() { return lookupTimeout; }
}
