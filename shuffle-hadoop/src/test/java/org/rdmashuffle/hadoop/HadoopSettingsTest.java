package org.rdmashuffle.hadoop;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.net.InetAddress;

import org.apache.hadoop.conf.Configuration;
import org.junit.jupiter.api.Test;
import org.rdmashuffle.core.config.EngineConfig;

/**
 * Where a node's engines listen when the operator leaves it to them: at the address YARN knows the
 * node by. A host with several addresses (or a network namespace, whose host name is the machine's)
 * is reached at the one its NodeManager registered; listening at the host name's address instead
 * leaves reducers knocking where nothing listens.
 */
class HadoopSettingsTest {
    @Test
    void aServiceListeningOnEveryAddressServesDataAtTheNodesYarnHostname() {
        Configuration conf = new Configuration(false);
        conf.set(HadoopSettings.NODE_MANAGER_HOSTNAME, "127.0.0.7");
        EngineConfig engine = HadoopSettings.serviceEngineConfig(conf, 0);
        assertEquals("127.0.0.7", conf.get(HadoopSettings.SOFTWARE_BIND_ADDRESS));
        assertEquals("127.0.0.7", engine.providerSettings().get(EngineConfig.KEY_SOFTWARE_BIND_ADDRESS, null),
                "what the engine hands the provider it chooses");
    }

    @Test
    void withoutAYarnHostnameTheHostsOwnNameIsUsed() throws Exception {
        Configuration conf = new Configuration(false);
        conf.set(HadoopSettings.NODE_MANAGER_HOSTNAME, "0.0.0.0"); // yarn-default.xml's value
        HadoopSettings.serviceEngineConfig(conf, 0);
        assertEquals(InetAddress.getLocalHost().getHostAddress(), conf.get(HadoopSettings.SOFTWARE_BIND_ADDRESS));
    }

    @Test
    void aContainersNodeHostIsResolved_andAnUnknownNameFallsBackToLoopback() {
        assertEquals("127.0.0.9", HadoopSettings.nodeAddress("127.0.0.9"));
        assertEquals("127.0.0.1", HadoopSettings.nodeAddress("no-such-host.invalid"));
    }
}
