"""The public switches: enable/disable/enabled, uuid, option checking."""

from __future__ import annotations

import pytest
import torch
import torch._inductor.config as inductor_config
from torch._inductor.custom_graph_pass import CustomGraphPass

import inductor_complex
from inductor_complex import ComplexToRealPass


class UserPass(CustomGraphPass):
    def __call__(self, graph):
        pass

    def uuid(self):
        return "user"


SLOTS = ("pre_grad_custom_pass", "joint_custom_post_pass", "post_grad_custom_pre_pass")


@pytest.fixture(autouse=True)
def clean_config():
    before = {slot: getattr(inductor_config, slot) for slot in SLOTS}
    yield
    for slot, value in before.items():
        setattr(inductor_config, slot, value)


def test_enable_keeps_the_users_pass_and_disable_removes_only_ours():
    user = UserPass()
    inductor_config.pre_grad_custom_pass = user
    ours = inductor_complex.enable()
    assert inductor_config.pre_grad_custom_pass == [user, ours]
    inductor_complex.enable()  # enabling twice does not stack two copies
    installed = inductor_config.pre_grad_custom_pass
    assert installed[0] is user and len(installed) == 2 and isinstance(installed[1], ComplexToRealPass)
    inductor_complex.disable()
    assert inductor_config.pre_grad_custom_pass is user
    inductor_complex.disable()
    assert inductor_config.pre_grad_custom_pass is user


def test_enable_fills_each_hook_with_its_companion_next_to_the_users_passes():
    users = {slot: UserPass() for slot in SLOTS}
    for slot, user in users.items():
        setattr(inductor_config, slot, user)
    ours = inductor_complex.enable()
    assert inductor_config.joint_custom_post_pass == [users["joint_custom_post_pass"], ours.joint]
    assert inductor_config.post_grad_custom_pre_pass == [users["post_grad_custom_pre_pass"], ours.post_grad]
    assert ours.inductor_options() == {"pre_grad_custom_pass": ours, "joint_custom_post_pass": ours.joint,
                                       "post_grad_custom_pre_pass": ours.post_grad}
    inductor_complex.disable()
    assert all(getattr(inductor_config, slot) is user for slot, user in users.items())


def test_enabled_context_restores_exactly_what_was_there():
    user = UserPass()
    inductor_config.pre_grad_custom_pass = [user]
    with inductor_complex.enabled(fused_rotary=False) as ours:
        assert ours.fused_rotary is False
        assert inductor_config.pre_grad_custom_pass == [user, ours]
    assert inductor_config.pre_grad_custom_pass == [user]


def test_enabled_context_compiles_complex_code():
    def fn(x, t):
        return torch.view_as_real(torch.view_as_complex(x) * t)

    x, t = torch.randn(3, 2), torch.randn(3, dtype=torch.complex64)
    with inductor_complex.enabled() as ours:
        torch.testing.assert_close(torch.compile(fn)(x, t), fn(x, t))
    assert ours.last_report.count("rewritten") == 3


def test_uuid_is_stable_and_depends_on_options():
    a, b = ComplexToRealPass(), ComplexToRealPass()
    assert a.uuid() == b.uuid() and isinstance(a.uuid(), bytes)
    assert ComplexToRealPass(fused_rotary=False).uuid() != a.uuid()
    assert ComplexToRealPass(fused_rotary=True).uuid() != ComplexToRealPass(fused_rotary=False).uuid()


def test_bad_option_values_are_refused_with_a_clear_error():
    with pytest.raises(TypeError, match="fused_rotary must be None, True or False"):
        ComplexToRealPass(fused_rotary="yes")
    for not_a_bool in (0, 1, 1.0):  # 0 == False, but the pattern tests `is False`
        with pytest.raises(TypeError, match="fused_rotary must be None, True or False"):
            ComplexToRealPass(fused_rotary=not_a_bool)
    with pytest.raises(TypeError, match="unexpected keyword"):
        ComplexToRealPass(fast=True)
