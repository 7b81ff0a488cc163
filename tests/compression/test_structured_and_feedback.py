"""N:4 selection and restoration (seed 000), the granularity schedule, and error feedback's algebra."""

import numpy as np
import pytest

from protocol import layouts as L
from worker.compression.feedback import ErrorFeedback
from worker.compression.schedule import GranularitySchedule
from worker.compression.structured import GranularityError, keep_mask, layout_for, restore, sparsify


def test_two_of_four_keeps_the_two_largest_magnitudes_of_each_group():
    x = np.array([1.0, -5.0, 3.0, 0.5, 0.0, 0.0, -2.0, 2.0, 7.0, 7.0, 7.0, 7.0], dtype=np.float32)
    assert keep_mask(x, 2).tolist() == [False, True, True, False, False, False, True, True, True, True, False, False]
    assert sparsify(x, 2).tolist() == [0, -5, 3, 0, 0, 0, -2, 2, 7, 7, 0, 0]
    assert sparsify(x, 1).tolist() == [0, -5, 0, 0, 0, 0, -2, 0, 7, 0, 0, 0]  # ties: the lower position


def test_a_short_last_group_is_padded_with_zeros_that_never_win():
    x = np.array([1, 2, 3, 4, -9, 8], dtype=np.int32)
    assert sparsify(x, 2).tolist() == [0, 0, 3, 4, -9, 8]
    assert sparsify(x, 1).tolist() == [0, 0, 0, 4, -9, 0]
    assert sparsify(x, 2).dtype == np.int32


@pytest.mark.parametrize("k", [64, 256, 1024])
@pytest.mark.parametrize("layout", [L.TWO_OF_FOUR, L.ONE_OF_FOUR], ids=lambda x: x.name)
def test_selection_packing_and_restoration_are_exact(layout, k):
    rng = np.random.default_rng(1)
    chunks = rng.integers(-(2**31), 2**31, size=(20, layout.positions(k)), dtype=np.int64).astype(np.int32)
    keep = np.stack([keep_mask(row, layout.keep) for row in chunks])
    masks, kept = L.pack_masked(chunks, keep, layout)
    assert masks.shape == (20, layout.groups(k)) and kept.shape == (20, layout.lanes(k))
    assert L.mask_bits_ok(masks, layout).all()
    restored = restore(masks, kept, layout)
    np.testing.assert_array_equal(restored, np.stack([sparsify(row, layout.keep) for row in chunks]))
    # packing the masks two to a byte and back loses nothing
    np.testing.assert_array_equal(L.unpack_masks(L.pack_masks(masks)), masks)


def test_granularity_names_and_schedule():
    assert layout_for("2:4") is L.TWO_OF_FOUR and layout_for(None) is L.DENSE
    with pytest.raises(GranularityError, match="unknown granularity '3:4'"):
        layout_for("3:4")
    schedule = GranularitySchedule.warmup_then(10, "2:4", coarsen_at=100)
    assert [schedule.granularity(i) for i in (0, 9, 10, 99, 100, 10**6)] == [
        "dense",
        "dense",
        "2:4",
        "2:4",
        "1:4",
        "1:4",
    ]
    assert GranularitySchedule().granularity(5) == "2:4"
    with pytest.raises(ValueError, match="starts at iteration 0"):
        GranularitySchedule(((3, "2:4"),))
    with pytest.raises(GranularityError):
        GranularitySchedule(((0, "dense"), (5, "1:8")))


def test_error_feedback_loses_nothing():
    """Over iterations, what was sent plus the residual equals the sum of the gradients."""
    rng = np.random.default_rng(3)
    feedback = ErrorFeedback()
    sent_total = np.zeros(1000, dtype=np.float64)
    grad_total = np.zeros(1000, dtype=np.float64)
    for _ in range(50):
        grad = rng.normal(size=1000).astype(np.float32)
        grad_total += grad
        corrected = feedback.corrected("w", grad)
        sent = sparsify(corrected, 1)
        feedback.keep("w", corrected, sent)
        sent_total += sent
    np.testing.assert_allclose(sent_total + feedback.residuals["w"], grad_total, atol=1e-4)
    # a value too small to be sent grows in the residual until it is
    feedback = ErrorFeedback()
    sent_small = 0.0
    for _ in range(4):
        corrected = feedback.corrected("v", np.array([0.4, 1.0, 0.0, 0.0], dtype=np.float32))
        sent = sparsify(corrected, 1)
        feedback.keep("v", corrected, sent)
        sent_small += float(sent[0])
    assert sent_small == pytest.approx(1.2), "the small value was sent (three times over) once its residual grew"


def test_feedback_keep_unsent_by_indices():
    feedback = ErrorFeedback()
    corrected = np.array([1.0, 2.0, 3.0, 4.0], dtype=np.float32)
    feedback.keep_unsent("x", corrected, np.array([1, 3]))
    assert feedback.residuals["x"].tolist() == [1.0, 0.0, 3.0, 0.0]
    assert feedback.norm() == pytest.approx(np.sqrt(10.0))
