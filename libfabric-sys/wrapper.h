/* Every libfabric header zerorx uses (the libfabric provider of zerorx-fabric and the
 * libzerorx-fi provider library); bindgen reads this file. */
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_collective.h>
#include <rdma/providers/fi_prov.h>
#include <rdma/providers/fi_log.h>
