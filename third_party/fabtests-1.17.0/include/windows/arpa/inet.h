
#pragma once


