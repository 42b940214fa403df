#pragma once
// Host side of launching a persistent kernel in thread-block clusters (the wgmma GEMMs whose CTAs
// share a W tile by TMA multicast): the launch configuration, and how many clusters the device
// holds at once. Plain C++ with the CUDA runtime; no device code.
#include <cuda_runtime.h>

namespace nvdet::kernels {

// A launch of `ctas` CTAs in clusters of `cluster` along x. cfg points at attr: use it in place.
struct ClusterLaunch {
  cudaLaunchConfig_t cfg{};
  cudaLaunchAttribute attr[1]{};
  ClusterLaunch(int ctas, int cluster, int threads, int smem_bytes, cudaStream_t stream) {
    cfg.gridDim = dim3(static_cast<unsigned>(ctas), 1, 1);
    cfg.blockDim = dim3(static_cast<unsigned>(threads), 1, 1);
    cfg.dynamicSmemBytes = static_cast<size_t>(smem_bytes);
    cfg.stream = stream;
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = static_cast<unsigned>(cluster);
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
  }
  ClusterLaunch(const ClusterLaunch&) = delete;
  ClusterLaunch& operator=(const ClusterLaunch&) = delete;
};

// How many clusters of `kernel` the device runs at once (0 when it cannot say): a persistent grid
// of more would leave the extra clusters to a second wave.
template <class Kernel>
int max_active_clusters(Kernel kernel, int cluster, int threads, int smem_bytes) {
  const ClusterLaunch one(cluster, cluster, threads, smem_bytes, nullptr);
  int clusters = 0;
  if (cudaOccupancyMaxActiveClusters(&clusters, kernel, &one.cfg) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return clusters;
}

}  // namespace nvdet::kernels
