"""torchvision's published definitions, ported in plain Python for the tests (torch is not
installed here): the reference our warps and policies are compared with."""

import math


def inverse_affine_matrix(center, angle, translate, scale, shear):
    """``torchvision.transforms.functional._get_inverse_affine_matrix(..., inverted=True)``,
    the same math in float64: the 2x3 map from output to input coordinates, six numbers."""
    rot = math.radians(angle)
    sx, sy = math.radians(shear[0]), math.radians(shear[1])
    cx, cy = center
    tx, ty = translate
    a = math.cos(rot - sy) / math.cos(sy)
    b = -math.cos(rot - sy) * math.tan(sx) / math.cos(sy) - math.sin(rot)
    c = math.sin(rot - sy) / math.cos(sy)
    d = -math.sin(rot - sy) * math.tan(sx) / math.cos(sy) + math.cos(rot)
    m = [x / scale for x in (d, -b, 0.0, -c, a, 0.0)]
    m[2] += m[0] * (-cx - tx) + m[1] * (-cy - ty) + cx
    m[5] += m[3] * (-cx - tx) + m[4] * (-cy - ty) + cy
    return m
