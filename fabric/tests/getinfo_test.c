// SPDX-License-Identifier: GPL-2.0
/*
 * The provider's fi_getinfo() filtering on the host, without a module:
 * dpf_getinfo_caps() with the capabilities a module would report.  What
 * dmaplane cannot do yet (FI_HMEM, atomics, remote CQ data beyond 8 bytes,
 * other endpoint types, other orderings) must be refused with
 * -FI_ENODATA, and what Open MPI's ofi MTL and fabtests ask for must be
 * granted.  Linked with the provider's objects (make fabric-tests).
 */
#include <string.h>

#include "../dp_prov.h"

#include "kselftest_harness.h"

#define V	FI_VERSION(1, 17)

static struct fi_info *hints_rdm(uint64_t caps)
{
	struct fi_info *h = fi_allocinfo();

	if (h) {
		h->caps = caps;
		h->ep_attr->type = FI_EP_RDM;
	}
	return h;
}

static int ask(struct fi_info *hints, uint64_t dev_caps, struct fi_info **out)
{
	int ret = dpf_getinfo_caps(V, hints, dev_caps, NULL, out);

	fi_freeinfo(hints);
	return ret;
}

TEST(no_hints_offers_everything_it_has)
{
	struct fi_info *fi;

	ASSERT_EQ(0, dpf_getinfo_caps(V, NULL, DPF_CAPS, NULL, &fi));
	ASSERT_NE(NULL, fi);
	EXPECT_EQ(NULL, fi->next);
	EXPECT_EQ(FI_EP_RDM, fi->ep_attr->type);
	EXPECT_EQ(DPF_CAPS, fi->caps);
	EXPECT_EQ(8, fi->domain_attr->cq_data_size);
	EXPECT_EQ(DPF_MR_MODE, fi->domain_attr->mr_mode);
	/* FI_MSG and FI_TAGGED together: the top tag bit is the provider's. */
	EXPECT_EQ(~DPF_MSG_TAG_BIT, fi->ep_attr->mem_tag_format);
	EXPECT_EQ(FI_ORDER_SAS, fi->tx_attr->msg_order & FI_ORDER_SAS);
	EXPECT_EQ(DPF_INJECT_SIZE, fi->tx_attr->inject_size);
	EXPECT_EQ(FI_THREAD_SAFE, fi->domain_attr->threading);
	EXPECT_EQ(FI_SOURCE | FI_REMOTE_CQ_DATA | FI_MULTI_RECV,
		  fi->caps & (FI_SOURCE | FI_REMOTE_CQ_DATA | FI_HMEM | FI_ATOMIC | FI_MULTI_RECV));
	EXPECT_EQ(FI_MULTI_RECV, fi->rx_attr->caps & FI_MULTI_RECV);
	EXPECT_EQ(0, fi->tx_attr->caps & FI_MULTI_RECV);
	EXPECT_EQ(0, strcmp(fi->fabric_attr->name, DPF_NAME));
	fi_freeinfo(fi);
}

/* The source address names the node; fi_getname() names the endpoint. */
TEST(source_address_is_the_node)
{
	struct dmaplane_name node = { .node_id = 0x1234, .ep_uid = 0 };
	struct fi_info *fi;

	ASSERT_EQ(0, dpf_getinfo_caps(V, NULL, DPF_CAPS, &node, &fi));
	ASSERT_EQ(DPF_ADDRLEN, fi->src_addrlen);
	ASSERT_NE(NULL, fi->src_addr);
	EXPECT_EQ(0, memcmp(fi->src_addr, &node, DPF_ADDRLEN));
	fi_freeinfo(fi);
}

/* What Open MPI 4.1's ofi MTL asks (ompi_mtl_ofi_component_init). */
TEST(open_mpi_mtl_hints)
{
	struct fi_info *h = hints_rdm(FI_TAGGED | FI_DIRECTED_RECV), *fi;

	ASSERT_NE(NULL, h);
	h->mode = FI_CONTEXT | FI_CONTEXT2;
	h->tx_attr->msg_order = FI_ORDER_SAS;
	h->rx_attr->msg_order = FI_ORDER_SAS;
	h->domain_attr->av_type = FI_AV_MAP;
	h->domain_attr->threading = FI_THREAD_DOMAIN;
	h->domain_attr->control_progress = FI_PROGRESS_MANUAL;
	h->domain_attr->resource_mgmt = FI_RM_ENABLED;
	h->domain_attr->mr_mode = FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_VIRT_ADDR;
	ASSERT_EQ(0, ask(h, DPF_CAPS, &fi));
	EXPECT_EQ(0, fi->caps & (FI_MSG | DPF_RMA_CAPS));
	EXPECT_NE(0, fi->caps & FI_TAGGED);
	/* Tagged only: all 64 bits are the application's. */
	EXPECT_EQ(~0ULL, fi->ep_attr->mem_tag_format);
	EXPECT_EQ(0, fi->domain_attr->mr_mode & FI_MR_LOCAL);
	EXPECT_EQ(FI_AV_MAP, fi->domain_attr->av_type);
	EXPECT_EQ(FI_THREAD_DOMAIN, fi->domain_attr->threading);
	EXPECT_EQ(0, fi->mode);
	fi_freeinfo(fi);
}

/*
 * fabtests' fi_getinfo_test (validate_primary_caps): every primary cap
 * asked for is in info->caps, and the receive side's in rx_attr->caps
 * (FI_RMA there: the endpoint is the target of RMA), the transmit side's
 * in tx_attr->caps; neither side names a cap info->caps lacks.
 */
TEST(primary_caps_on_both_sides)
{
	static const uint64_t each[] = { FI_MSG, FI_TAGGED, FI_RMA, FI_DIRECTED_RECV };

	for (unsigned int set = 1; set < 16; set++) {
		struct fi_info *h, *fi;
		uint64_t caps = 0;

		for (unsigned int b = 0; b < 4; b++)
			if (set & (1u << b))
				caps |= each[b];
		h = hints_rdm(caps);
		ASSERT_NE(NULL, h);
		h->domain_attr->mr_mode = DPF_MR_MODE;
		ASSERT_EQ(0, ask(h, DPF_CAPS, &fi));
		EXPECT_EQ(caps, fi->caps & caps);
		EXPECT_EQ(caps & (FI_MSG | FI_TAGGED | FI_RMA),
			  fi->tx_attr->caps & (FI_MSG | FI_TAGGED | FI_RMA));
		EXPECT_EQ(caps & (FI_MSG | FI_TAGGED | FI_RMA | FI_DIRECTED_RECV),
			  fi->rx_attr->caps & (FI_MSG | FI_TAGGED | FI_RMA | FI_DIRECTED_RECV));
		EXPECT_EQ(0, fi->rx_attr->caps & ~fi->caps);
		EXPECT_EQ(0, fi->tx_attr->caps & ~fi->caps);
		fi_freeinfo(fi);
	}
}

TEST(not_yet_in_the_abi_is_refused)
{
	struct fi_info *h, *fi;

	EXPECT_EQ(-FI_ENODATA, ask(hints_rdm(FI_TAGGED | FI_HMEM), DPF_CAPS, &fi));
	EXPECT_EQ(-FI_ENODATA, ask(hints_rdm(FI_ATOMIC), DPF_CAPS, &fi));
	EXPECT_EQ(-FI_ENODATA, ask(hints_rdm(FI_RMA | FI_RMA_EVENT), DPF_CAPS, &fi));
	h = hints_rdm(FI_TAGGED);
	ASSERT_NE(NULL, h);
	h->domain_attr->cq_data_size = 16;
	EXPECT_EQ(-FI_ENODATA, ask(h, DPF_CAPS, &fi));
}

/*
 * FI_MULTI_RECV as MPICH's ch4:ofi asks for it (with FI_MSG for its active
 * messages) and as fi_multi_recv does (rx op_flags FI_MULTI_RECV): offered,
 * on the receive side, and the op flags come back as asked.
 */
TEST(multi_recv_is_offered_on_the_receive_side)
{
	struct fi_info *h, *fi;

	h = hints_rdm(FI_MSG | FI_TAGGED | FI_MULTI_RECV | FI_DIRECTED_RECV);
	ASSERT_NE(NULL, h);
	h->rx_attr->op_flags = FI_MULTI_RECV;
	ASSERT_EQ(0, ask(h, DPF_CAPS, &fi));
	ASSERT_NE(NULL, fi);
	EXPECT_EQ(FI_MULTI_RECV, fi->caps & FI_MULTI_RECV);
	EXPECT_EQ(FI_MULTI_RECV, fi->rx_attr->caps & FI_MULTI_RECV);
	EXPECT_EQ(FI_MULTI_RECV, fi->rx_attr->op_flags);
	fi_freeinfo(fi);
	/* Not asked for, not given. */
	ASSERT_EQ(0, ask(hints_rdm(FI_MSG), DPF_CAPS, &fi));
	ASSERT_NE(NULL, fi);
	EXPECT_EQ(0, fi->caps & FI_MULTI_RECV);
	EXPECT_EQ(0, fi->rx_attr->caps & FI_MULTI_RECV);
	fi_freeinfo(fi);
}

/*
 * Remote CQ data (8 bytes) and FI_SOURCE come from the module
 * (DMAPLANE_CAP_CQ_DATA, DMAPLANE_CAP_SRC_AV): offered when it has them,
 * refused when it does not.  Open MPI's default tag mode asks for
 * cq_data_size >= 4.
 */
TEST(cq_data_and_source_follow_the_module)
{
	struct fi_info *h, *fi;

	h = hints_rdm(FI_TAGGED | FI_REMOTE_CQ_DATA | FI_SOURCE);
	ASSERT_NE(NULL, h);
	h->domain_attr->cq_data_size = 4;
	ASSERT_EQ(0, ask(h, DPF_CAPS, &fi));
	EXPECT_EQ(8, fi->domain_attr->cq_data_size);
	EXPECT_EQ(FI_REMOTE_CQ_DATA | FI_SOURCE, fi->caps & (FI_REMOTE_CQ_DATA | FI_SOURCE));
	fi_freeinfo(fi);
	/* cq_data_size without the cap bit: still the module's 8 bytes. */
	h = hints_rdm(FI_TAGGED);
	ASSERT_NE(NULL, h);
	h->domain_attr->cq_data_size = 8;
	ASSERT_EQ(0, ask(h, DPF_CAPS, &fi));
	EXPECT_EQ(8, fi->domain_attr->cq_data_size);
	fi_freeinfo(fi);
	/* A module without them. */
	EXPECT_EQ(-FI_ENODATA, ask(hints_rdm(FI_TAGGED | FI_SOURCE),
				   DPF_CAPS & ~DPF_DATA_CAPS, &fi));
	EXPECT_EQ(-FI_ENODATA, ask(hints_rdm(FI_TAGGED | FI_REMOTE_CQ_DATA),
				   DPF_CAPS & ~DPF_DATA_CAPS, &fi));
	h = hints_rdm(FI_TAGGED);
	ASSERT_NE(NULL, h);
	h->domain_attr->cq_data_size = 4;
	EXPECT_EQ(-FI_ENODATA, ask(h, DPF_CAPS & ~DPF_DATA_CAPS, &fi));
	ASSERT_EQ(0, dpf_getinfo_caps(V, NULL, DPF_CAPS & ~DPF_DATA_CAPS, NULL, &fi));
	EXPECT_EQ(0, fi->domain_attr->cq_data_size);
	EXPECT_EQ(0, fi->caps & DPF_DATA_CAPS);
	fi_freeinfo(fi);
}

TEST(other_endpoint_types_are_refused)
{
	struct fi_info *h;
	struct fi_info *fi;

	h = hints_rdm(FI_MSG);
	ASSERT_NE(NULL, h);
	h->ep_attr->type = FI_EP_MSG;
	EXPECT_EQ(-FI_ENODATA, ask(h, DPF_CAPS, &fi));
	h = hints_rdm(FI_MSG);
	ASSERT_NE(NULL, h);
	h->ep_attr->type = FI_EP_DGRAM;
	EXPECT_EQ(-FI_ENODATA, ask(h, DPF_CAPS, &fi));
}

TEST(rma_needs_endpoint_bound_provider_keys)
{
	struct fi_info *h, *fi;

	h = hints_rdm(FI_RMA | FI_MSG);
	ASSERT_NE(NULL, h);
	h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_PROV_KEY;
	EXPECT_EQ(-FI_ENODATA, ask(h, DPF_CAPS, &fi));

	h = hints_rdm(FI_RMA | FI_MSG);
	ASSERT_NE(NULL, h);
	h->domain_attr->mr_mode = FI_MR_BASIC;
	EXPECT_EQ(-FI_ENODATA, ask(h, DPF_CAPS, &fi));

	/* fabtests' default: FI_MR_LOCAL | FI_MR_ENDPOINT | basic map */
	h = hints_rdm(FI_RMA | FI_MSG);
	ASSERT_NE(NULL, h);
	h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_ENDPOINT | FI_MR_ALLOCATED |
				  FI_MR_PROV_KEY | FI_MR_VIRT_ADDR;
	ASSERT_EQ(0, ask(h, DPF_CAPS, &fi));
	EXPECT_EQ(FI_MR_PROV_KEY | FI_MR_ENDPOINT, fi->domain_attr->mr_mode);
	EXPECT_EQ(~0ULL, fi->ep_attr->mem_tag_format);	/* no FI_TAGGED */
	fi_freeinfo(fi);
}

/* Without mode bits for RMA, an application that did not ask for it gets none. */
TEST(rma_only_on_offer_is_dropped)
{
	struct fi_info *h = hints_rdm(0), *fi;

	ASSERT_NE(NULL, h);
	h->domain_attr->mr_mode = 0;
	ASSERT_EQ(0, ask(h, DPF_CAPS, &fi));
	EXPECT_EQ(0, fi->caps & DPF_RMA_CAPS);
	EXPECT_EQ(0, fi->domain_attr->mr_mode);
	fi_freeinfo(fi);
}

TEST(module_without_rma)
{
	uint64_t dev = DPF_CAPS & ~DPF_RMA_CAPS;
	struct fi_info *fi;

	ASSERT_EQ(0, dpf_getinfo_caps(V, NULL, dev, NULL, &fi));
	EXPECT_EQ(0, fi->caps & DPF_RMA_CAPS);
	fi_freeinfo(fi);
	EXPECT_EQ(-FI_ENODATA, ask(hints_rdm(FI_RMA), dev, &fi));
}

TEST(limits_and_orderings)
{
	struct fi_info *h, *fi;

	h = hints_rdm(FI_TAGGED);
	ASSERT_NE(NULL, h);
	h->tx_attr->msg_order = FI_ORDER_SAS | FI_ORDER_RAW;
	EXPECT_EQ(-FI_ENODATA, ask(h, DPF_CAPS, &fi));

	h = hints_rdm(FI_TAGGED);
	ASSERT_NE(NULL, h);
	h->tx_attr->inject_size = DPF_INJECT_SIZE + 1;
	EXPECT_EQ(-FI_ENODATA, ask(h, DPF_CAPS, &fi));

	h = hints_rdm(FI_TAGGED);
	ASSERT_NE(NULL, h);
	h->tx_attr->iov_limit = DPF_IOV_LIMIT + 1;
	EXPECT_EQ(-FI_ENODATA, ask(h, DPF_CAPS, &fi));

	h = hints_rdm(FI_TAGGED);
	ASSERT_NE(NULL, h);
	h->addr_format = FI_SOCKADDR_IN;
	EXPECT_EQ(-FI_ENODATA, ask(h, DPF_CAPS, &fi));

	h = hints_rdm(FI_TAGGED | FI_MSG);
	ASSERT_NE(NULL, h);
	h->ep_attr->mem_tag_format = ~0ULL;	/* the top bit is taken */
	EXPECT_EQ(-FI_ENODATA, ask(h, DPF_CAPS, &fi));

	h = hints_rdm(FI_TAGGED);
	ASSERT_NE(NULL, h);
	h->tx_attr->size = 256;
	h->rx_attr->size = 4096;
	ASSERT_EQ(0, ask(h, DPF_CAPS, &fi));
	EXPECT_EQ(256, fi->tx_attr->size);
	EXPECT_EQ(4096, fi->rx_attr->size);
	fi_freeinfo(fi);
}

TEST(names_must_be_ours)
{
	struct fi_info *h, *fi;

	h = hints_rdm(FI_TAGGED);
	ASSERT_NE(NULL, h);
	h->fabric_attr->prov_name = strdup("tcp");
	EXPECT_EQ(-FI_ENODATA, ask(h, DPF_CAPS, &fi));

	h = hints_rdm(FI_TAGGED);
	ASSERT_NE(NULL, h);
	h->domain_attr->name = strdup("mlx5_0");
	EXPECT_EQ(-FI_ENODATA, ask(h, DPF_CAPS, &fi));

	h = hints_rdm(FI_TAGGED);
	ASSERT_NE(NULL, h);
	h->fabric_attr->prov_name = strdup("dmaplane");
	ASSERT_EQ(0, ask(h, DPF_CAPS, &fi));
	fi_freeinfo(fi);
}

TEST_HARNESS_MAIN
