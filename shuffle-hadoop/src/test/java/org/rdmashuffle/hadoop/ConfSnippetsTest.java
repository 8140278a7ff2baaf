package org.rdmashuffle.hadoop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.mapred.ShuffleConsumerPlugin;
import org.apache.hadoop.mapred.ShuffleHandler;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.api.AuxiliaryService;
import org.junit.jupiter.api.Test;

/** conf/yarn-site.xml and conf/mapred-site.xml name classes and keys that exist, and agree on the port. */
class ConfSnippetsTest {
    private static Configuration load(String name) {
        Path file = Path.of("..", "conf", name);
        assertTrue(Files.isRegularFile(file), file + " exists");
        Configuration c = new Configuration(false);
        c.addResource(new org.apache.hadoop.fs.Path(file.toAbsolutePath().toString()));
        return c;
    }

    @Test
    void yarnSite_runsTheServiceAsMapReducesShuffle() {
        Configuration yarn = load("yarn-site.xml");
        assertEquals(ShuffleHandler.MAPREDUCE_SHUFFLE_SERVICEID, yarn.get(YarnConfiguration.NM_AUX_SERVICES));
        Class<?> service = yarn.getClass(String.format(YarnConfiguration.NM_AUX_SERVICE_FMT,
                ShuffleHandler.MAPREDUCE_SHUFFLE_SERVICEID), null);
        assertEquals(RdmaShuffleService.class, service);
        assertTrue(AuxiliaryService.class.isAssignableFrom(service));
        assertTrue(yarn.get(String.format(YarnConfiguration.NM_AUX_SERVICES_CLASSPATH,
                ShuffleHandler.MAPREDUCE_SHUFFLE_SERVICEID)).endsWith("-yarn.jar"));
    }

    @Test
    void mapredSite_selectsTheConsumer_onTheServicesPort() {
        Configuration yarn = load("yarn-site.xml");
        Configuration mapred = load("mapred-site.xml");
        Class<?> consumer = mapred.getClass(RdmaShuffleConsumerPlugin.CONSUMER_PLUGIN_KEY, null);
        assertEquals(RdmaShuffleConsumerPlugin.class, consumer);
        assertTrue(ShuffleConsumerPlugin.class.isAssignableFrom(consumer));
        assertEquals(HadoopSettings.servicePort(yarn), HadoopSettings.servicePort(mapred));
        assertTrue(mapred.get("mapreduce.application.classpath").contains("-yarn.jar"));
        assertTrue(mapred.getBoolean(HadoopSettings.MAPREDUCE_FALLBACK, false));
    }
}
