package org.rdmashuffle.hadoop;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.conf.StorageUnit;
import org.rdmashuffle.core.config.EngineConfig;
import org.rdmashuffle.core.config.SettingSource;

/**
 * The settings of the YARN service ({@code yarn-site.xml}) and of the MapReduce consumer
 * ({@code mapred-site.xml} or the job): the engine's keys under {@code rdma.shuffle.}, and the few
 * that belong to Hadoop alone (those the Java 17 classes read too are {@link HadoopKeys}'). docs/yarn.md
 * lists them.
 */
final class HadoopSettings {
    static final String PREFIX = HadoopKeys.PREFIX;
    static final String SERVICE_PORT = HadoopKeys.SERVICE_PORT;
    static final int DEFAULT_SERVICE_PORT = 13570;
    /** Where the service listens; reducers reach it at the map host's name. */
    static final String SERVICE_BIND_ADDRESS = PREFIX + "service.bindAddress";
    static final String SERVICE_AUTHENTICATE = HadoopKeys.SERVICE_AUTHENTICATE;
    static final String MAPREDUCE_FALLBACK = HadoopKeys.MAPREDUCE_FALLBACK;
    /**
     * Bad {@code rdma.shuffle.*} values fail a reduce task's shuffle and a service at their start (default
     * true); false: one WARN names them ({@link HadoopSettingsCheck}).
     */
    static final String STRICT_CONFIG = PREFIX + "strictConfig";
    static final String STOP_ON_FAILURE = HadoopKeys.STOP_ON_FAILURE;
    /** The software provider's data listener (it defaults to the engine's bind address, loopback for a wildcard). */
    static final String SOFTWARE_BIND_ADDRESS = PREFIX + EngineConfig.KEY_SOFTWARE_BIND_ADDRESS;
    static final String NODE_MANAGER_HOSTNAME = HadoopKeys.NODE_MANAGER_HOSTNAME;
    /** The environment variable YARN sets in every container: the host its NodeManager registered as. */
    static final String CONTAINER_NODE_HOST = "NM_HOST";

    /** Per application in a service: 64 x 32 KiB receive and 32 x 32 KiB send buffers, 3 MiB registered. */
    static final int SERVICE_RECEIVE_BUFFERS = 64;
    static final int SERVICE_SEND_BUFFERS = 32;

    private HadoopSettings() {
    }

    /**
     * The engine's settings from {@code rdma.shuffle.*}, durations and sizes read as Hadoop reads its own
     * ({@link #source}); the control port and address as given. Errors name the full keys.
     */
    static EngineConfig engineConfig(Configuration conf, String bindAddress, int controlPort) {
        EngineConfig c = EngineConfig.read(PREFIX, source(conf));
        c.set(EngineConfig.KEY_BIND_ADDRESS, bindAddress);
        c.set(EngineConfig.KEY_CONTROL_PORT, Integer.toString(controlPort));
        return c.validate();
    }

    /**
     * A NodeManager service's engine settings: it listens on {@code service.bindAddress}:{@code port};
     * the software provider's data listener defaults to the host's address when that is the wildcard.
     */
    static EngineConfig serviceEngineConfig(Configuration conf, int port) {
        String bind = conf.get(SERVICE_BIND_ADDRESS, "0.0.0.0");
        if (conf.get(SOFTWARE_BIND_ADDRESS) == null && bind.equals("0.0.0.0")) {
            conf.set(SOFTWARE_BIND_ADDRESS, nodeAddress(conf.get(NODE_MANAGER_HOSTNAME)));
        }
        // A service gives every application receive and send buffers of its own (its own protection
        // domain): smaller pools than an executor's, unless the operator sets them.
        Configuration withDefaults = new Configuration(conf);
        withDefaults.setIfUnset(PREFIX + EngineConfig.KEY_RECEIVE_BUFFERS, Integer.toString(SERVICE_RECEIVE_BUFFERS));
        withDefaults.setIfUnset(PREFIX + EngineConfig.KEY_RECEIVE_LOW_WATER, Integer.toString(SERVICE_RECEIVE_BUFFERS / 4));
        withDefaults.setIfUnset(PREFIX + EngineConfig.KEY_SEND_BUFFERS, Integer.toString(SERVICE_SEND_BUFFERS));
        return engineConfig(withDefaults, bind, port);
    }

    /**
     * {@code conf}'s settings, durations read with {@code Configuration.getTimeDuration} (a bare number is
     * milliseconds) and sizes with {@code Configuration.getStorageSize}; a bare number of bytes, which
     * getStorageSize refuses, is read as Hadoop's other size reader, {@code getLongBytes}, reads it.
     */
    static SettingSource source(Configuration conf) {
        return new SettingSource() {
            @Override
            public String get(String key) {
                return conf.get(key);
            }

            @Override
            public Duration duration(String key) {
                return Duration.ofNanos(conf.getTimeDuration(key, "0", TimeUnit.MILLISECONDS, TimeUnit.NANOSECONDS));
            }

            @Override
            public long size(String key) {
                String text = conf.getTrimmed(key);
                return text.matches("-?[0-9]+") ? conf.getLongBytes(key, 0) : (long) conf.getStorageSize(key, "0b", StorageUnit.BYTES);
            }

            @Override
            public String durations() {
                return "a duration as Hadoop's Configuration.getTimeDuration reads it, such as 30s, 5m, 1h, 100ms or 50us "
                        + "(units ns, us, ms, s, m, h, d; a bare number is milliseconds)";
            }

            @Override
            public String sizes() {
                return "a size as Hadoop's Configuration.getStorageSize reads it, such as 512k, 16m, 1.5g or 64kb "
                        + "(units b, k or kb, m or mb, g or gb, t or tb, p or pb, e or eb; a bare number is bytes)";
            }
        };
    }

    static int servicePort(Configuration conf) {
        return conf.getInt(SERVICE_PORT, DEFAULT_SERVICE_PORT);
    }

    /**
     * The address of this node as YARN knows it: {@code nodeHost} (the NodeManager's
     * {@code yarn.nodemanager.hostname}, or a container's {@code NM_HOST}) when it names one, else
     * the host's own name's address (loopback if it has none). A node with several addresses is
     * reached at the one its NodeManager registered, so that is the one to listen on.
     */
    static String nodeAddress(String nodeHost) {
        try {
            if (nodeHost != null && !nodeHost.isBlank() && !nodeHost.equals("0.0.0.0")) {
                return java.net.InetAddress.getByName(nodeHost.strip()).getHostAddress();
            }
            return java.net.InetAddress.getLocalHost().getHostAddress();
        } catch (java.net.UnknownHostException e) {
            return "127.0.0.1";
        }
    }
}
