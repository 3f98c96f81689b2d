// SPDX-License-Identifier: GPL-2.0
/*
 * The provider's poll sets (fabric/dp_poll.c) on the host, without a
 * module: a domain, CQs and counters with no endpoint bound, entries put
 * into a CQ by dpf_cq_push() as draining a ring would.  fi_poll() must
 * return a CQ's context while it holds an entry and a counter's once per
 * change (fi_poll(3)), and the calls must refuse what they cannot do with
 * a precise error.  Linked with the provider's objects (make fabric-tests).
 */
#include <string.h>

#include "../dp_prov.h"

#include "kselftest_harness.h"

FIXTURE(pollset)
{
	struct dpf_fabric fab;
	struct fid_domain *dom;
	struct fid_cq *cq[2];
	struct fid_cntr *cntr;
	struct fid_poll *ps;
	int ctx[3];		/* the contexts: cq[0], cq[1], cntr */
};

FIXTURE_SETUP(pollset)
{
	struct fi_info *info = fi_allocinfo();
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED,
				      .wait_obj = FI_WAIT_NONE };
	struct fi_cntr_attr cntr_attr = { .events = FI_CNTR_EVENTS_COMP,
					  .wait_obj = FI_WAIT_NONE };
	struct fi_poll_attr attr = { 0 };

	ASSERT_NE(NULL, info);
	memset(&self->fab, 0, sizeof(self->fab));
	self->fab.fabric.fid.fclass = FI_CLASS_FABRIC;
	info->domain_attr->name = strdup(DPF_NAME);
	ASSERT_EQ(0, dpf_domain_open(&self->fab.fabric, info, &self->dom, NULL));
	fi_freeinfo(info);
	ASSERT_EQ(0, fi_cq_open(self->dom, &cq_attr, &self->cq[0], &self->ctx[0]));
	ASSERT_EQ(0, fi_cq_open(self->dom, &cq_attr, &self->cq[1], &self->ctx[1]));
	ASSERT_EQ(0, fi_cntr_open(self->dom, &cntr_attr, &self->cntr, &self->ctx[2]));
	ASSERT_EQ(0, fi_poll_open(self->dom, &attr, &self->ps));
}

FIXTURE_TEARDOWN(pollset)
{
	if (self->ps)
		EXPECT_EQ(0, fi_close(&self->ps->fid));
	EXPECT_EQ(0, fi_close(&self->cntr->fid));
	EXPECT_EQ(0, fi_close(&self->cq[1]->fid));
	EXPECT_EQ(0, fi_close(&self->cq[0]->fid));
	EXPECT_EQ(0, fi_close(&self->dom->fid));
}

/* An entry in @cq, as draining an endpoint's ring puts one there. */
static void push(struct fid_cq *fcq)
{
	struct dpf_cq *cq = container_of(fcq, struct dpf_cq, cq);

	dpf_cq_push(cq)->op_context = cq;
}

TEST_F(pollset, empty_set_and_quiet_members_return_nothing)
{
	void *got[4];

	EXPECT_EQ(0, fi_poll(self->ps, got, 4));
	ASSERT_EQ(0, fi_poll_add(self->ps, &self->cq[0]->fid, 0));
	ASSERT_EQ(0, fi_poll_add(self->ps, &self->cntr->fid, 0));
	EXPECT_EQ(0, fi_poll(self->ps, got, 4));
}

TEST_F(pollset, cq_context_while_it_holds_an_entry)
{
	struct fi_cq_tagged_entry e;
	void *got[4];

	ASSERT_EQ(0, fi_poll_add(self->ps, &self->cq[0]->fid, 0));
	ASSERT_EQ(0, fi_poll_add(self->ps, &self->cq[1]->fid, 0));
	push(self->cq[1]);
	ASSERT_EQ(1, fi_poll(self->ps, got, 4));
	EXPECT_EQ(&self->ctx[1], got[0]);
	/* not consumed: a CQ is returned for as long as it is not empty */
	ASSERT_EQ(1, fi_poll(self->ps, got, 4));
	EXPECT_EQ(&self->ctx[1], got[0]);
	ASSERT_EQ(1, fi_cq_read(self->cq[1], &e, 1));
	EXPECT_EQ(0, fi_poll(self->ps, got, 4));
}

TEST_F(pollset, count_limits_the_contexts)
{
	void *got[4] = { NULL };

	ASSERT_EQ(0, fi_poll_add(self->ps, &self->cq[0]->fid, 0));
	ASSERT_EQ(0, fi_poll_add(self->ps, &self->cq[1]->fid, 0));
	push(self->cq[0]);
	push(self->cq[1]);
	ASSERT_EQ(1, fi_poll(self->ps, got, 1));
	EXPECT_EQ(NULL, got[1]);
	EXPECT_EQ(2, fi_poll(self->ps, got, 4));
	EXPECT_NE(got[0], got[1]);
	EXPECT_EQ(0, fi_poll(self->ps, got, 0));
	EXPECT_EQ(-FI_EINVAL, fi_poll(self->ps, NULL, 1));
	EXPECT_EQ(-FI_EINVAL, fi_poll(self->ps, got, -1));
}

TEST_F(pollset, counter_context_once_per_change)
{
	struct dpf_cntr *cntr = container_of(self->cntr, struct dpf_cntr, cntr);
	void *got[4];

	ASSERT_EQ(0, fi_cntr_add(self->cntr, 5));
	/* what it held when added is not news */
	ASSERT_EQ(0, fi_poll_add(self->ps, &self->cntr->fid, 0));
	EXPECT_EQ(0, fi_poll(self->ps, got, 4));
	/* a completion counted (as draining a ring does) */
	cntr->value++;
	ASSERT_EQ(1, fi_poll(self->ps, got, 4));
	EXPECT_EQ(&self->ctx[2], got[0]);
	EXPECT_EQ(0, fi_poll(self->ps, got, 4));
	cntr->err++;
	ASSERT_EQ(1, fi_poll(self->ps, got, 4));
	EXPECT_EQ(0, fi_poll(self->ps, got, 4));
	/* fi_cntr_set() resets what counts as a change */
	ASSERT_EQ(0, fi_cntr_set(self->cntr, 0));
	EXPECT_EQ(0, fi_poll(self->ps, got, 4));
	ASSERT_EQ(0, fi_cntr_set(self->cntr, 3));
	cntr->value++;
	ASSERT_EQ(1, fi_poll(self->ps, got, 4));
	EXPECT_EQ(4, fi_cntr_read(self->cntr));
}

TEST_F(pollset, bad_calls_fail_precisely)
{
	struct fi_poll_attr attr = { .flags = 1 };
	struct fid_poll *ps2;

	EXPECT_EQ(-FI_EINVAL, fi_poll_open(self->dom, &attr, &ps2));
	EXPECT_EQ(-FI_EINVAL, fi_poll_add(self->ps, &self->cq[0]->fid, 1));
	EXPECT_EQ(-FI_EINVAL, fi_poll_add(self->ps, &self->dom->fid, 0));
	EXPECT_EQ(-FI_EINVAL, fi_poll_add(self->ps, &self->ps->fid, 0));
	EXPECT_EQ(-FI_ENOENT, fi_poll_del(self->ps, &self->cq[0]->fid, 0));
	ASSERT_EQ(0, fi_poll_add(self->ps, &self->cq[0]->fid, 0));
	EXPECT_EQ(-FI_EALREADY, fi_poll_add(self->ps, &self->cq[0]->fid, 0));
	EXPECT_EQ(-FI_EINVAL, fi_poll_del(self->ps, &self->cq[0]->fid, 1));
	EXPECT_EQ(0, fi_poll_del(self->ps, &self->cq[0]->fid, 0));
	EXPECT_EQ(-FI_ENOENT, fi_poll_del(self->ps, &self->cq[0]->fid, 0));
}

TEST_F(pollset, members_stay_open_while_in_a_set)
{
	ASSERT_EQ(0, fi_poll_add(self->ps, &self->cq[0]->fid, 0));
	ASSERT_EQ(0, fi_poll_add(self->ps, &self->cntr->fid, 0));
	EXPECT_EQ(-FI_EBUSY, fi_close(&self->cq[0]->fid));
	EXPECT_EQ(-FI_EBUSY, fi_close(&self->cntr->fid));
	/* and the domain while the set is open */
	EXPECT_EQ(-FI_EBUSY, fi_close(&self->dom->fid));
	ASSERT_EQ(0, fi_poll_del(self->ps, &self->cntr->fid, 0));
	/* closing the set lets go of the rest */
	ASSERT_EQ(0, fi_close(&self->ps->fid));
	self->ps = NULL;
}

TEST_F(pollset, a_set_takes_only_its_domains_members)
{
	struct fi_info *info = fi_allocinfo();
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_CONTEXT,
				      .wait_obj = FI_WAIT_NONE };
	struct fid_domain *dom2;
	struct fid_cq *cq2;

	ASSERT_NE(NULL, info);
	info->domain_attr->name = strdup(DPF_NAME);
	ASSERT_EQ(0, dpf_domain_open(&self->fab.fabric, info, &dom2, NULL));
	fi_freeinfo(info);
	ASSERT_EQ(0, fi_cq_open(dom2, &cq_attr, &cq2, NULL));
	EXPECT_EQ(-FI_EINVAL, fi_poll_add(self->ps, &cq2->fid, 0));
	EXPECT_EQ(0, fi_close(&cq2->fid));
	EXPECT_EQ(0, fi_close(&dom2->fid));
}

TEST_HARNESS_MAIN
