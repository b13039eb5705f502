// A CXL memory pool shared by the nodes of a cluster (issue 25, docs/memory-tiers.md "Pooled CXL
// memory"): one KV tier level that every rank of every node sharing the pool reads and writes
// (a prefix stored by node A is a hit for node B), and the pool's device bandwidth divided among
// the nodes loading from it at once.
//
// Bandwidth: each node's engine has its own flow fabric, whose topology holds the pool's media
// as one resource ("cxlpool.media") beside the node's own host port to the switch. The share
// gives that resource, in every attached fabric, the node's part of the pool's device bandwidth:
// max-min fair over the nodes with pool transfers in flight, each capped at its own host ports'
// bandwidth (pool_port_shares: the switch arbitrates between its ports), the whole pool to a
// node alone. It re-divides whenever a node starts or stops using the pool (FlowFabric::watch),
// at that simulated time. Ignored: a node's pool flows held below its share by a resource other
// than its ports (the GPU link, HBM) leave the rest of its share unused by the others.
// SystemC side (serving_sim): it drives the fabrics.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "interconnects/link_model.hpp"
#include "memory/cxl_pool_spec.hpp"
#include "serving/kv_tier.hpp"

namespace kappasim {

class FlowFabric;

class CxlPoolShare {
 public:
  // `capacity_bytes`: the pooled tier (serving.tiers.cxl_capacity), whole.
  CxlPoolShare(const CxlPoolSpec& pool, double capacity_bytes);
  ~CxlPoolShare();

  // The pooled KV level: created by the first caller with its chunk size and whole-replica bytes
  // per token; a later caller whose chunks differ gets an InputError naming `who`.
  KvTier& tier(int chunk_tokens, double bytes_per_token, const std::string& who);
  // A node's link back end joins the pool's bandwidth sharing. InputError naming
  // serving.link_fidelity when it is not a flow fabric with the pool's resources.
  void attach(LinkModule& link, const std::string& who);
  std::size_t hosts() const { return m_hosts.size(); }
  // What each attached fabric's media resource gets now (bytes read per second), in attach order.
  std::vector<double> shares() const;

 private:
  void rebalance();
  struct Host {
    FlowFabric* fabric;
    int media;      // its "cxlpool.media" resource
    double demand;  // its host ports' bandwidth, bytes/s (H2D)
  };
  CxlPoolSpec m_pool;
  double m_capacity_bytes;
  std::vector<Host> m_hosts;
  std::unique_ptr<KvTier> m_tier;
};

}  // namespace kappasim
