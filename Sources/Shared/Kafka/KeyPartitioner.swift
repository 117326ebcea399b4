import CRdKafka

/// Which partition a key's records land on: the producers' partitioner (`murmur2_random`, Java's, so that Herald's
/// keys and a JVM producer's agree), computed by librdkafka itself. A read of a profile's state asks the instance that
/// owns this partition.
package enum KeyPartitioner {
    package static func partition(of key: String, partitions: Int32) -> Int32 {
        precondition(partitions > 0, "a topic has at least one partition")
        var bytes = Array(key.utf8)
        return bytes.withUnsafeMutableBytes { buffer in
            rd_kafka_msg_partitioner_murmur2(nil, buffer.baseAddress, buffer.count, partitions, nil, nil)
        }
    }
}
