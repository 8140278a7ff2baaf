/*
 * Prints the size and field offsets of every libibverbs struct and ibv_context_ops slot the Java
 * bindings use, as compiled against the installed infiniband/verbs.h. VerbsLayoutTest compiles
 * this with gcc, runs it and compares each line with the jextract-generated layouts.
 *
 * Output lines: "sizeof <struct> <bytes>" and "offsetof <struct> <field.path> <bytes>".
 */
#include <stddef.h>
#include <stdio.h>
#include <infiniband/verbs.h>

#define SIZE(s) printf("sizeof %s %zu\n", #s, sizeof(struct s))
#define OFF(s, f) printf("offsetof %s %s %zu\n", #s, #f, offsetof(struct s, f))

int main(void)
{
	SIZE(ibv_context);
	OFF(ibv_context, device);
	OFF(ibv_context, ops);
	OFF(ibv_context, cmd_fd);
	OFF(ibv_context, async_fd);
	OFF(ibv_context, abi_compat);

	SIZE(ibv_context_ops);
	OFF(ibv_context_ops, poll_cq);
	OFF(ibv_context_ops, req_notify_cq);
	OFF(ibv_context_ops, post_srq_recv);
	OFF(ibv_context_ops, post_send);
	OFF(ibv_context_ops, post_recv);

	SIZE(verbs_context);
	OFF(verbs_context, query_port);
	OFF(verbs_context, query_device_ex);
	OFF(verbs_context, sz);
	OFF(verbs_context, context);

	SIZE(ibv_send_wr);
	OFF(ibv_send_wr, wr_id);
	OFF(ibv_send_wr, next);
	OFF(ibv_send_wr, sg_list);
	OFF(ibv_send_wr, num_sge);
	OFF(ibv_send_wr, opcode);
	OFF(ibv_send_wr, send_flags);
	OFF(ibv_send_wr, imm_data);
	OFF(ibv_send_wr, wr.rdma.remote_addr);
	OFF(ibv_send_wr, wr.rdma.rkey);
	OFF(ibv_send_wr, wr.atomic.remote_addr);
	OFF(ibv_send_wr, wr.atomic.compare_add);
	OFF(ibv_send_wr, wr.atomic.swap);
	OFF(ibv_send_wr, wr.atomic.rkey);

	SIZE(ibv_recv_wr);
	OFF(ibv_recv_wr, wr_id);
	OFF(ibv_recv_wr, next);
	OFF(ibv_recv_wr, sg_list);
	OFF(ibv_recv_wr, num_sge);

	SIZE(ibv_sge);
	OFF(ibv_sge, addr);
	OFF(ibv_sge, length);
	OFF(ibv_sge, lkey);

	SIZE(ibv_wc);
	OFF(ibv_wc, wr_id);
	OFF(ibv_wc, status);
	OFF(ibv_wc, opcode);
	OFF(ibv_wc, vendor_err);
	OFF(ibv_wc, byte_len);
	OFF(ibv_wc, imm_data);
	OFF(ibv_wc, qp_num);
	OFF(ibv_wc, src_qp);
	OFF(ibv_wc, wc_flags);

	SIZE(ibv_mr);
	OFF(ibv_mr, addr);
	OFF(ibv_mr, length);
	OFF(ibv_mr, lkey);
	OFF(ibv_mr, rkey);

	SIZE(ibv_cq);
	OFF(ibv_cq, cqe);
	SIZE(ibv_comp_channel);
	OFF(ibv_comp_channel, fd);

	SIZE(ibv_qp);
	OFF(ibv_qp, qp_num);
	OFF(ibv_qp, state);

	SIZE(ibv_qp_cap);
	OFF(ibv_qp_cap, max_send_wr);
	OFF(ibv_qp_cap, max_recv_wr);
	OFF(ibv_qp_cap, max_send_sge);
	OFF(ibv_qp_cap, max_recv_sge);
	OFF(ibv_qp_cap, max_inline_data);

	SIZE(ibv_qp_init_attr);
	OFF(ibv_qp_init_attr, send_cq);
	OFF(ibv_qp_init_attr, recv_cq);
	OFF(ibv_qp_init_attr, srq);
	OFF(ibv_qp_init_attr, cap);
	OFF(ibv_qp_init_attr, qp_type);
	OFF(ibv_qp_init_attr, sq_sig_all);

	SIZE(ibv_qp_attr);
	OFF(ibv_qp_attr, qp_state);
	OFF(ibv_qp_attr, path_mtu);
	OFF(ibv_qp_attr, rq_psn);
	OFF(ibv_qp_attr, sq_psn);
	OFF(ibv_qp_attr, dest_qp_num);
	OFF(ibv_qp_attr, qp_access_flags);
	OFF(ibv_qp_attr, cap);
	OFF(ibv_qp_attr, ah_attr);
	OFF(ibv_qp_attr, pkey_index);
	OFF(ibv_qp_attr, max_rd_atomic);
	OFF(ibv_qp_attr, max_dest_rd_atomic);
	OFF(ibv_qp_attr, min_rnr_timer);
	OFF(ibv_qp_attr, port_num);
	OFF(ibv_qp_attr, timeout);
	OFF(ibv_qp_attr, retry_cnt);
	OFF(ibv_qp_attr, rnr_retry);

	SIZE(ibv_ah_attr);
	OFF(ibv_ah_attr, grh);
	OFF(ibv_ah_attr, dlid);
	OFF(ibv_ah_attr, sl);
	OFF(ibv_ah_attr, is_global);
	OFF(ibv_ah_attr, port_num);
	SIZE(ibv_global_route);
	OFF(ibv_global_route, dgid);
	OFF(ibv_global_route, sgid_index);
	OFF(ibv_global_route, hop_limit);

	SIZE(ibv_srq_attr);
	OFF(ibv_srq_attr, max_wr);
	OFF(ibv_srq_attr, max_sge);
	OFF(ibv_srq_attr, srq_limit);
	SIZE(ibv_srq_init_attr);
	OFF(ibv_srq_init_attr, attr);

	SIZE(ibv_device_attr);
	OFF(ibv_device_attr, fw_ver);
	OFF(ibv_device_attr, node_guid);
	OFF(ibv_device_attr, max_mr_size);
	OFF(ibv_device_attr, max_qp);
	OFF(ibv_device_attr, max_qp_wr);
	OFF(ibv_device_attr, max_sge);
	OFF(ibv_device_attr, max_cqe);
	OFF(ibv_device_attr, max_qp_rd_atom);
	OFF(ibv_device_attr, atomic_cap);
	OFF(ibv_device_attr, max_srq_wr);
	OFF(ibv_device_attr, max_srq_sge);
	OFF(ibv_device_attr, phys_port_cnt);
	OFF(ibv_device_attr, device_cap_flags);
	OFF(ibv_device_attr, max_mw);

	SIZE(ibv_device_attr_ex);
	OFF(ibv_device_attr_ex, orig_attr);
	OFF(ibv_device_attr_ex, odp_caps);
	OFF(ibv_device_attr_ex, device_cap_flags_ex);
	SIZE(ibv_odp_caps);
	OFF(ibv_odp_caps, general_caps);
	OFF(ibv_odp_caps, per_transport_caps.rc_odp_caps);

	SIZE(ibv_port_attr);
	OFF(ibv_port_attr, state);
	OFF(ibv_port_attr, max_mtu);
	OFF(ibv_port_attr, active_mtu);
	OFF(ibv_port_attr, gid_tbl_len);
	OFF(ibv_port_attr, max_msg_sz);
	OFF(ibv_port_attr, lid);
	OFF(ibv_port_attr, active_width);
	OFF(ibv_port_attr, active_speed);
	OFF(ibv_port_attr, phys_state);
	OFF(ibv_port_attr, link_layer);

	SIZE(ibv_gid_entry);
	OFF(ibv_gid_entry, gid);
	OFF(ibv_gid_entry, gid_index);
	OFF(ibv_gid_entry, port_num);
	OFF(ibv_gid_entry, gid_type);
	OFF(ibv_gid_entry, ndev_ifindex);

	SIZE(ibv_async_event);
	OFF(ibv_async_event, element);
	OFF(ibv_async_event, event_type);
	return 0;
}
